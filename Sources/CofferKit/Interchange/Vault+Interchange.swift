import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's interchange operations: each is ``Interchange``'s.
extension Vault {
    /// What ``exportEntries(includeLocalOnly:history:)`` selected.
    public struct InterchangeSelection: Sendable {
        public var entries: [InterchangeEntry]
        /// Local-only items left out (names).
        public var leftOutLocalOnly: [String]
        /// Items with concurrent versions: their shown values were taken.
        public var conflicted: [String]
    }

    /// Stores entries read from another tool's file, all in ONE transaction:
    /// on any error nothing is written. Names are cleaned and put under
    /// `options.prefix`; two entries with one name become `NAME`, `NAME (2)`…;
    /// a name already in the vault holding an identical item is skipped (so
    /// importing a file twice changes nothing), a different item is handled
    /// by `options.onConflict`. With `options.dryRun` nothing is written and
    /// the report says what would be. See docs/import-export.md.
    public func importEntries(
        _ entries: [InterchangeEntry], options: InterchangeOptions = InterchangeOptions(),
        progress: InterchangeProgress? = nil
    ) throws(CofferError) -> InterchangeReport {
        try interchange.importEntries(entries, options: options, progress: progress)
    }

    /// Stores the entries a reading thread produces (``InterchangeStream``)
    /// while it reads: the same rules and the same single transaction as
    /// ``importEntries(_:options:progress:)``; the reader's error, or an
    /// entry Coffer cannot store, rolls everything back. The stream is
    /// stopped when this returns.
    public func importEntries(
        _ stream: InterchangeStream, options: InterchangeOptions = InterchangeOptions(),
        progress: InterchangeProgress? = nil
    ) throws(CofferError) -> InterchangeReport {
        try interchange.importEntries(stream, options: options, progress: progress)
    }

    /// Every live item (decrypted) as interchange entries, sorted by name,
    /// in one read transaction. The vault's own reserved items are left out;
    /// `local-only` items only with `includeLocalOnly`. With `history`, each
    /// entry carries the earlier states of its fields (oldest first).
    public func exportEntries(includeLocalOnly: Bool, history: Bool) throws(CofferError) -> InterchangeSelection {
        try interchange.exportEntries(includeLocalOnly: includeLocalOnly, history: history)
    }
}
