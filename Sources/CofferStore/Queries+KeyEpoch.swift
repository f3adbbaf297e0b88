import CofferSync
import Foundation
import GRDB

extension IntegrityTerm {
    /// The vault-MAC term of the `keyEpoch` row (format 5):
    /// "K" || epoch || key check (area: the header). No row, no term.
    public static func keyEpoch(_ epoch: KeyEpoch, check: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 80)
        w.u8(UInt8(ascii: "K"))
        w.bytes(epoch.encoded)
        w.blob16(check)
        return w.data
    }
}

extension Queries {
    /// The vault's key epoch and its key check (``KeyEpoch/initial`` and
    /// nil when the row is absent: the key made by `init`).
    public static func keyEpoch(_ db: Database) throws -> (epoch: KeyEpoch, check: [UInt8]?) { try keyEpoch(ReadConnection(db)) }

    public static func keyEpoch(_ db: ReadConnection) throws -> (epoch: KeyEpoch, check: [UInt8]?) {
        guard try tableExists(db, "keyEpoch"),
            let (bytes, check) = try db.fetchOne(
                "SELECT epoch, keyCheck FROM keyEpoch WHERE singleton = 1", [],
                { row in (try row.bytes(at: 0, name: "keyEpoch.epoch"), try row.bytes(at: 1, name: "keyEpoch.keyCheck", length: 32)) })
        else { return (.initial, nil) }
        let epoch: KeyEpoch
        do { epoch = try KeyEpoch(decoding: bytes) } catch {
            throw StoreError.damaged("keyEpoch.epoch is malformed (\(error))")
        }
        guard !epoch.isInitial else { throw StoreError.damaged("keyEpoch holds epoch 0, which is never stored") }
        return (epoch, check)
    }

    /// Replaces the key epoch row. The caller rebuilds the vault MAC
    /// under the new key afterwards (a rekey changes every term), so no
    /// accumulator is kept here.
    public static func setKeyEpoch(_ db: Database, _ epoch: KeyEpoch, check: [UInt8]) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO keyEpoch (singleton, epoch, keyCheck) VALUES (1, ?, ?)",
            arguments: [Data(epoch.encoded), Data(check)])
    }
}

extension Queries {
    /// Rewrites one item for a rekey: its row's name hash, its sealed
    /// record, and every current and history version (register ids and
    /// payloads change; dots, vectors, times and tombstones do not). The
    /// caller recomputes the vault MAC from every row afterwards, under
    /// the new key (``computeMAC(_:into:)``), so no term is toggled here.
    public static func rewriteItemForRekey(
        _ db: Database, row: ItemRow, record: [UInt8], versions: [(RegisterID, FieldVersion)],
        history: [(RegisterID, FieldVersion, Int64)]
    ) throws {
        let id = Data(row.id.bytes)
        try db.cachedStatement(sql: "UPDATE item SET nameHash = ?, record = ? WHERE itemId = ?")
            .execute(arguments: [row.nameHash.map { Data($0) }, Data(record), id])
        try db.cachedStatement(sql: "DELETE FROM fieldVersion WHERE itemId = ?").execute(arguments: [id])
        try db.cachedStatement(sql: "DELETE FROM fieldHistory WHERE itemId = ?").execute(arguments: [id])
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for (rid, v) in versions {
            try insert.execute(arguments: [
                id, Data(rid.bytes), Data(v.dot.replica.bytes), Int64(v.dot.counter), Data(v.vector.encoded),
                v.writtenAt, v.isTombstone, Data(v.payload),
            ])
        }
        let retire = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO fieldHistory (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload, supersededAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for (rid, v, at) in history {
            try retire.execute(arguments: [
                id, Data(rid.bytes), Data(v.dot.replica.bytes), Int64(v.dot.counter), Data(v.vector.encoded),
                v.writtenAt, v.isTombstone, Data(v.payload), at,
            ])
        }
    }

    /// Sets the header's format version (a rekey, which rebuilds the MAC
    /// that covers it, marks the vault with the newest format).
    public static func setFormatVersion(_ db: Database, _ version: Int) throws {
        try db.execute(sql: "UPDATE vault SET formatVersion = ? WHERE singleton = 1", arguments: [version])
    }
}
