import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// An unlocked vault: the keys are in guarded memory and every item
/// operation is available. Thread-safe: SQLite access is serialized by
/// the store and the keys never change after unlock.
///
/// A façade: each operation is one of a component's (``VaultComponent``),
/// which share one ``VaultCore``. The operations of each concern are in
/// its folder, with the façade's forwarders beside them in a file called
/// `Vault+<Concern>.swift` (docs/architecture.md, "Where do I put…").
public final class Vault: Sendable, VaultComponent {
    package let core: VaultCore

    init(file: VaultFile, master: SecretBytes, listingCache: ListingCache? = nil, rebuildIntegrity: Bool = false) throws {
        core = try VaultCore(file: file, master: master, listingCache: listingCache, rebuildIntegrity: rebuildIntegrity)
    }

    /// A vault object under `master` whose integrity is not checked: the
    /// target of a rekey (``VaultCore/init(file:rekeyTarget:)``).
    init(file: VaultFile, rekeyTarget master: SecretBytes) {
        core = VaultCore(file: file, rekeyTarget: master)
    }

    /// The façade over an existing core (a component that hands out a
    /// ``Vault``, such as a sync that adopted a newer key).
    package init(core: VaultCore) {
        self.core = core
    }

    public var file: VaultFile { core.file }
    public var path: String { core.path }
    public var vaultID: VaultID { core.vaultID }

    /// The master key, for code of this package that must hand it on (a
    /// shell session, re-wrapping). Not public: an application never needs
    /// the key itself (sessions are reused with ``Coffer/Unlock/session``).
    package var masterKey: SecretBytes { keys.master }

    // MARK: Names

    /// Checks and normalizes an item name: a `/`-separated path of
    /// non-empty components, no control characters, Unicode NFC.
    public static func normalizeName(_ raw: String) throws(CofferError) -> String {
        // ASCII is its own NFC; Foundation's normalization costs a bridge
        // through NSString and a runtime conformance look-up on every `get`.
        let name = raw.utf8.allSatisfy({ $0 < 0x80 }) ? raw : raw.precomposedStringWithCanonicalMapping
        guard !name.isEmpty else { throw CofferError(.usage, "an item name cannot be empty") }
        guard !name.hasPrefix("/"), !name.hasSuffix("/"), !name.contains("//") else {
            throw CofferError(.usage, "invalid item name '\(name)': a name is a path like work/openai, without empty parts or leading or trailing '/'")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw CofferError(.usage, "invalid item name: control characters are not allowed")
        }
        guard !name.hasPrefix("id:") else {
            throw CofferError(.usage, "invalid item name '\(name)': names starting with 'id:' are reserved for addressing items by id")
        }
        guard name.utf8.count <= 1024 else { throw CofferError(.usage, "item name is longer than 1024 bytes") }
        return name
    }

    /// A field name in Unicode NFC (the form every replica hashes into
    /// the field's register id), checked.
    static func normalizeFieldName(_ raw: String) throws(CofferError) -> String {
        let name = raw.utf8.allSatisfy({ $0 < 0x80 }) ? raw : raw.precomposedStringWithCanonicalMapping
        try checkFieldName(name)
        return name
    }

    static func checkFieldName(_ name: String) throws(CofferError) {
        guard !name.isEmpty, !name.hasPrefix("@"), !name.contains("="),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\n" })
        else {
            throw CofferError(.usage, "invalid field name '\(name)': use letters, digits, '-', '_' or '.'; '@' and '=' are reserved")
        }
    }

    // MARK: Encoding

    /// Which payloads are padded (docs/key-hierarchy.md): the name and
    /// every secret field, whose lengths say something about their
    /// content. The other metadata (type, tags, source, expiry, env,
    /// delete marker) and plain fields are not, which keeps bundles and
    /// imports small.
    static func padsPayload(_ payload: FieldPayload, register: RegisterID) -> Bool {
        payload.isSecret || register == .name
    }

    static let metadataRegisters: [(RegisterID, String)] = [
        (.name, "@name"), (.type, "@type"), (.tags, "@tags"), (.source, "@source"), (.expires, "@expires"),
        (.deleted, "@deleted"), (.env, "@env"),
    ]

    /// Refuses a value above ``Field/maxValueBytes`` (16 MiB).
    static func checkSizes(_ fields: [Field], of item: String) throws(CofferError) {
        for f in fields where f.bytes.count > Field.maxValueBytes {
            throw CofferError(
                .usage, "field '\(f.name)' of '\(item)' is \(f.bytes.count) bytes; a value may be at most 16 MiB (\(Field.maxValueBytes) bytes)",
                hint: "store a smaller file, or keep the file elsewhere and its key in coffer")
        }
    }

    /// Refuses an item whose values together exceed ``Field/maxItemBytes``.
    static func checkItemSize(_ fields: [Field], of item: String) throws(CofferError) {
        let total = fields.reduce(0) { $0 + $1.bytes.count }
        guard total <= Field.maxItemBytes else {
            throw CofferError(
                .usage, "the values of '\(item)' would total \(total) bytes; an item may hold at most 28 MiB (\(Field.maxItemBytes) bytes)",
                hint: "put large files in items of their own")
        }
    }

    static func tagsText(_ tags: [String]) -> String { Array(Set(tags)).sorted().joined(separator: "\n") }

    static func checkTag(_ t: String) throws(CofferError) {
        guard !t.isEmpty, !t.contains("\n"), !t.contains(",") else {
            throw CofferError(.usage, "invalid tag '\(t)': tags are non-empty and contain no comma or newline")
        }
    }
}
