import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// A passphrase change that an import brought to this replica
/// (docs/sync.md §Passphrase changes).
public struct PassphraseChange: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The bundle's wrapping superseded this vault's: adopted. The vault
        /// now opens with the passphrase set on ``PassphraseChange/replica``.
        case adopted
        /// The bundle's change was concurrent with this vault's own and won
        /// the deterministic rule: adopted.
        case adoptedOverConcurrent
        /// The bundle's change was concurrent with this vault's own and lost:
        /// this vault keeps its passphrase (and every replica will adopt it).
        case keptOverConcurrent
    }

    public var outcome: Outcome
    /// The replica whose `passwd` made the bundle's wrapping.
    public var replica: ReplicaID
    /// When that `passwd` ran (ms since 1970, that machine's clock).
    public var changedAt: Int64
    /// For a concurrent change: the replica whose change this vault held.
    public var concurrentWith: ReplicaID?
}

extension Replication {
    package func keyWrappingVersion() throws(CofferError) -> KeyWrappingVersion {
        try CofferError.wrap { try store.read { db in try Queries.keyWrapping(db) } }
    }

    /// Called in the import transaction once every record is merged (so
    /// the whole bundle, header included, is authenticated under this
    /// vault's key): adopts the bundle's passphrase wrapping when it
    /// supersedes this vault's or wins a concurrent change. The master key
    /// is unchanged: only its wrapping (KDF parameters, salt, wrapped key)
    /// is replaced.
    func resolveKeyWrapping(_ header: BundleHeader, db: StoreConnection, mac: VaultMAC) throws -> PassphraseChange? {
        let local = try Queries.keyWrapping(db)
        let incoming = header.wrapping
        let current = try Queries.header(db)
        let sameBytes = current.wrappedMasterKey == header.wrappedMasterKey && current.kdfSalt == header.salt
        // A wrapping made by a build before vault format 7 (bundle format
        // 1 to 3, `coffer-wrap-v1`/`v2`) cannot replace a bound one: the
        // key would no longer say that this vault has integrity data, and
        // this file would refuse to open (docs/key-hierarchy.md). Nothing
        // of it is taken, not even its version, so the change is adopted
        // once that replica's newer build wraps it again (same version,
        // bound bytes).
        if header.wrapBinding == .legacy && current.wrapBinding == .integrity && !sameBytes {
            switch KeyWrappingVersion.resolve(local: local, incoming: incoming) {
            case .adopt, .concurrentAdopt: return nil
            case .same, .keepLocal, .concurrentKeep: break
            }
        }
        func adopt(_ version: KeyWrappingVersion) throws {
            if !sameBytes {
                // The header is authenticated by now (unlike a clone's, which
                // must be checked before Argon2id runs): its KDF parameters
                // are within the format's bounds and were chosen by a key
                // holder's `passwd`.
                var updated = current
                updated.kdfMemoryKiB = header.kdf.memoryKiB
                updated.kdfIterations = header.kdf.iterations
                updated.kdfParallelism = header.kdf.parallelism
                updated.kdfSalt = header.salt
                updated.wrappedMasterKey = header.wrappedMasterKey
                // A bound wrapping makes this vault format 7.
                if header.wrapBinding == .integrity { updated.formatVersion = max(updated.formatVersion, VaultStore.boundWrapFormat) }
                try Queries.updateHeaderWrapping(db, header: updated, mac: mac)
            }
            try Queries.setKeyWrapping(db, version, mac: mac)
        }
        let resolution = KeyWrappingVersion.resolve(local: local, incoming: incoming)
        switch resolution {
        case .same, .keepLocal:
            break
        case .adopt:
            try adopt(incoming)
        case .concurrentAdopt(let merged):
            try adopt(KeyWrappingVersion(vector: merged, changedBy: incoming.changedBy, changedAt: incoming.changedAt))
        case .concurrentKeep(let merged):
            try Queries.setKeyWrapping(db, KeyWrappingVersion(vector: merged, changedBy: local.changedBy, changedAt: local.changedAt), mac: mac)
        }
        return Replication.passphraseNotice(resolution, local: local, incoming: incoming, sameBytes: sameBytes)
    }

    /// What importing a bundle with `header` would do to this vault's
    /// passphrase (`import --dry-run`, `sync --dry-run`); changes nothing.
    func previewKeyWrapping(_ header: BundleHeader, db: StoreConnection) throws -> PassphraseChange? {
        let local = try Queries.keyWrapping(db)
        let current = try Queries.header(db)
        let sameBytes = current.wrappedMasterKey == header.wrappedMasterKey && current.kdfSalt == header.salt
        return Replication.passphraseNotice(
            KeyWrappingVersion.resolve(local: local, incoming: header.wrapping), local: local, incoming: header.wrapping, sameBytes: sameBytes)
    }

    /// The notice for a resolution: none when nothing a person must know
    /// changed (the same wrapping, or only its version, as on a clone).
    static func passphraseNotice(
        _ resolution: KeyWrappingVersion.Resolution, local: KeyWrappingVersion, incoming: KeyWrappingVersion, sameBytes: Bool
    ) -> PassphraseChange? {
        guard let by = incoming.changedBy else { return nil }
        switch resolution {
        case .same, .keepLocal:
            return nil
        case .adopt:
            return sameBytes ? nil : PassphraseChange(outcome: .adopted, replica: by, changedAt: incoming.changedAt, concurrentWith: nil)
        case .concurrentAdopt:
            return sameBytes
                ? nil : PassphraseChange(outcome: .adoptedOverConcurrent, replica: by, changedAt: incoming.changedAt, concurrentWith: local.changedBy)
        case .concurrentKeep:
            return PassphraseChange(outcome: .keptOverConcurrent, replica: by, changedAt: incoming.changedAt, concurrentWith: local.changedBy)
        }
    }
}

extension Replication {
    /// Whether importing a bundle with `header` would change nothing: its
    /// summary is covered by this vault's and its passphrase wrapping does
    /// not need resolving (sync skips such bundles).
    static func bringsNothing(_ header: BundleHeader, summary: VersionVector, wrapping: KeyWrappingVersion) -> Bool {
        guard header.summary.isDominated(by: summary) else { return false }
        switch KeyWrappingVersion.resolve(local: wrapping, incoming: header.wrapping) {
        case .same, .keepLocal: return true
        case .adopt, .concurrentAdopt, .concurrentKeep: return false
        }
    }
}

extension PassphraseChange {
    /// The line a dry run prints: what the import would do.
    public var previewMessage: String {
        let when = Date(timeIntervalSince1970: Double(changedAt) / 1000).ISO8601Format()
        let who = replica.hex.prefix(8)
        switch outcome {
        case .adopted, .adoptedOverConcurrent:
            return
                "would adopt the passphrase changed on \(who) at \(when)\(outcome == .adopted ? "" : " (concurrent with this vault's change; it wins)"): this vault would then open only with the new one"
        case .keptOverConcurrent:
            return "the passphrase change made on \(who) at \(when) is concurrent with this vault's and would lose: this vault would keep its passphrase"
        }
    }

    /// The line a person reads on stderr (without the `coffer: ` prefix).
    public var message: String {
        let when = Date(timeIntervalSince1970: Double(changedAt) / 1000).ISO8601Format()
        let who = replica.hex.prefix(8)
        switch outcome {
        case .adopted:
            return "passphrase changed on \(who) at \(when); this vault now opens with the new one"
        case .adoptedOverConcurrent:
            return
                "passphrase changed on \(who) at \(when), concurrently with the change made on \(concurrentWith.map { String($0.hex.prefix(8)) } ?? "this replica"); \(who)'s change wins on every replica, and this vault now opens with its new passphrase"
        case .keptOverConcurrent:
            return
                "passphrase changed on \(who) at \(when), concurrently with the change made on \(concurrentWith.map { String($0.hex.prefix(8)) } ?? "this replica"); that change wins on every replica, and this vault keeps its passphrase"
        }
    }
}
