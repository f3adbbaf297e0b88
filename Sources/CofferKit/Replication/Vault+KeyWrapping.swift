import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import GRDB

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

extension Vault {
    /// The version of this vault's passphrase wrapping.
    public func keyWrappingVersion() throws(CofferError) -> KeyWrappingVersion {
        try CofferError.wrap { try store.read { db in try Queries.keyWrapping(db) } }
    }

    /// Called in the import transaction once every record is merged (so
    /// the whole bundle, header included, is authenticated under this
    /// vault's key): adopts the bundle's passphrase wrapping when it
    /// supersedes this vault's or wins a concurrent change. The master key
    /// is unchanged: only its wrapping (KDF parameters, salt, wrapped key)
    /// is replaced.
    func resolveKeyWrapping(_ header: BundleHeader, db: Database, mac: VaultMAC) throws -> PassphraseChange? {
        let local = try Queries.keyWrapping(db)
        let incoming = header.wrapping
        let current = try Queries.header(db)
        let sameBytes = current.wrappedMasterKey == header.wrappedMasterKey && current.kdfSalt == header.salt
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
                try Queries.updateKeyWrapping(db, header: updated, mac: mac)
            }
            try Queries.setKeyWrapping(db, version, mac: mac)
        }
        switch KeyWrappingVersion.resolve(local: local, incoming: incoming) {
        case .same, .keepLocal:
            return nil
        case .adopt:
            try adopt(incoming)
            guard !sameBytes, let by = incoming.changedBy else { return nil }
            return PassphraseChange(outcome: .adopted, replica: by, changedAt: incoming.changedAt, concurrentWith: nil)
        case .concurrentAdopt(let merged):
            try adopt(KeyWrappingVersion(vector: merged, changedBy: incoming.changedBy, changedAt: incoming.changedAt))
            guard !sameBytes, let by = incoming.changedBy else { return nil }
            return PassphraseChange(outcome: .adoptedOverConcurrent, replica: by, changedAt: incoming.changedAt, concurrentWith: local.changedBy)
        case .concurrentKeep(let merged):
            try Queries.setKeyWrapping(db, KeyWrappingVersion(vector: merged, changedBy: local.changedBy, changedAt: local.changedAt), mac: mac)
            guard let by = incoming.changedBy else { return nil }
            return PassphraseChange(outcome: .keptOverConcurrent, replica: by, changedAt: incoming.changedAt, concurrentWith: local.changedBy)
        }
    }
}

extension Vault {
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
    /// The line a person reads on stderr (without the `coffer: ` prefix).
    public var message: String {
        let when = Date(timeIntervalSince1970: Double(changedAt) / 1000).ISO8601Format()
        let who = replica.hex.prefix(8)
        switch outcome {
        case .adopted:
            return "passphrase changed on \(who) at \(when); this vault now opens with the new one"
        case .adoptedOverConcurrent:
            return "passphrase changed on \(who) at \(when), concurrently with the change made on \(concurrentWith.map { String($0.hex.prefix(8)) } ?? "this replica"); \(who)'s change wins on every replica, and this vault now opens with its new passphrase"
        case .keptOverConcurrent:
            return "passphrase changed on \(who) at \(when), concurrently with the change made on \(concurrentWith.map { String($0.hex.prefix(8)) } ?? "this replica"); that change wins on every replica, and this vault keeps its passphrase"
        }
    }
}
