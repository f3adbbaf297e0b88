import CofferSync
import Foundation
import GRDB

extension IntegrityTerm {
    /// The vault-MAC term of one `identityUnlock` row (format 8):
    /// "U" || public identity payload (65) || sealed key (area: the header).
    public static func identityUnlock(identity: [UInt8], sealedKey: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 1 + 2 + identity.count + 2 + sealedKey.count)
        w.u8(UInt8(ascii: "U"))
        w.blob16(identity)
        w.blob16(sealedKey)
        return w.data
    }
}

/// One row of `identityUnlock` (vault format 8, docs/key-hierarchy.md,
/// "Unlocking with a member identity"): this replica's master key of the
/// current key epoch sealed to a member identity.
public struct IdentityUnlockRow: Sendable, Equatable {
    /// The public identity's 65-byte payload (version, X25519, Ed25519).
    public var identity: [UInt8]
    /// `crypto_box_seal("coffer-seal-v1" || vault id || key epoch || master key)`.
    public var sealedKey: [UInt8]

    public init(identity: [UInt8], sealedKey: [UInt8]) {
        self.identity = identity
        self.sealedKey = sealedKey
    }

    /// The length of a public identity's payload.
    public static let identityLength = 65
    /// The length of a sealed master key (as in a bundle: 62 + 32 + 48).
    public static let sealedKeyLength = 142
}

extension Queries {
    /// Every identity allowed to unlock this file, in identity order
    /// (none before format 8).
    public static func identityUnlocks(_ db: Database) throws -> [IdentityUnlockRow] { try identityUnlocks(ReadConnection(db)) }

    public static func identityUnlocks(_ db: ReadConnection) throws -> [IdentityUnlockRow] {
        guard try tableExists(db, "identityUnlock") else { return [] }
        var out: [IdentityUnlockRow] = []
        try db.forEachRow("SELECT identity, sealedKey FROM identityUnlock ORDER BY identity") { row in
            out.append(
                IdentityUnlockRow(
                    identity: try row.bytes(at: 0, name: "identityUnlock.identity", length: IdentityUnlockRow.identityLength),
                    sealedKey: try row.bytes(at: 1, name: "identityUnlock.sealedKey", length: IdentityUnlockRow.sealedKeyLength)))
        }
        return out
    }

    /// Adds or replaces the row of `row.identity`, keeping the vault MAC
    /// in step.
    public static func setIdentityUnlock(_ db: Database, _ row: IdentityUnlockRow, mac: VaultMAC) throws {
        for old in try identityUnlocks(db) where old.identity == row.identity {
            mac.toggle(IntegrityTerm.identityUnlock(identity: old.identity, sealedKey: old.sealedKey))
        }
        try db.execute(
            sql: "INSERT OR REPLACE INTO identityUnlock (identity, sealedKey) VALUES (?, ?)",
            arguments: [Data(row.identity), Data(row.sealedKey)])
        mac.toggle(IntegrityTerm.identityUnlock(identity: row.identity, sealedKey: row.sealedKey))
    }

    /// Replaces every row at once (a rekey re-seals the new key to each
    /// identity). The caller rebuilds the vault MAC from every row.
    public static func replaceIdentityUnlocks(_ db: Database, _ rows: [IdentityUnlockRow]) throws {
        try db.execute(sql: "DELETE FROM identityUnlock")
        for row in rows {
            try db.execute(
                sql: "INSERT INTO identityUnlock (identity, sealedKey) VALUES (?, ?)", arguments: [Data(row.identity), Data(row.sealedKey)])
        }
    }
}
