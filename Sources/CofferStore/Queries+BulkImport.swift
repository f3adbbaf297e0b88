import CofferSync
import Foundation
import GRDB

/// The bulk write path of bundle imports and clones: items the vault does
/// not hold yet are inserted with plain `INSERT`s through cached
/// statements, without reading any old state first.
extension Queries {
    /// Whether the vault holds no item at all (deleted ones included).
    public static func holdsNoItems(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM item)") ?? true
    }

    /// The secondary indexes that a load into an empty vault rebuilds at
    /// the end instead of maintaining row by row (both are written in
    /// random order: a keyed hash and another replica's counters).
    static let bulkLoadIndexes = ["fieldVersion_dot", "item_nameHash"]

    /// Drops ``bulkLoadIndexes`` and returns their exact `CREATE INDEX`
    /// statements, for ``createIndexes(_:_:)``. Only inside a write
    /// transaction: a rollback brings the indexes back, and the schema
    /// after ``createIndexes(_:_:)`` is the same text (Schemas/vault.sql).
    public static func dropBulkLoadIndexes(_ db: Database) throws -> [String] {
        precondition(db.isInsideTransaction, "drop indexes only inside the import transaction")
        var created: [String] = []
        for name in bulkLoadIndexes {
            guard
                let sql = try String.fetchOne(
                    db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [name])
            else { continue }
            try db.execute(sql: "DROP INDEX \(name)")
            created.append(sql)
        }
        return created
    }

    /// Recreates the indexes that ``dropBulkLoadIndexes(_:)`` dropped.
    public static func createIndexes(_ db: Database, _ statements: [String]) throws {
        for sql in statements { try db.execute(sql: sql) }
    }

    /// Whether the vault holds a row for `id`.
    public static func itemExists(_ db: Database, id: ItemID) throws -> Bool {
        let stmt = try db.cachedStatement(sql: "SELECT 1 FROM item WHERE itemId = ?")
        return try Int.fetchOne(stmt, arguments: [Data(id.bytes)]) != nil
    }

    /// Inserts an item the vault does not hold (no history to move): its
    /// row, then its versions. Fails on an existing id (primary key).
    public static func insertNewItem(_ db: Database, row: ItemRow, state: ItemState) throws {
        let idData = Data(row.id.bytes)
        try db.cachedStatement(
            sql: """
                INSERT INTO item (itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            idData, row.policy.rawValue, row.nameHash.map { Data($0) }, row.isDeleted, row.hasConflict,
            row.createdAt, row.updatedAt,
        ])
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for (rid, versions) in state.registers {
            let ridData = Data(rid.bytes)
            for v in versions {
                try insert.execute(arguments: [
                    idData, ridData, Data(v.dot.replica.bytes), Int64(v.dot.counter), Data(v.vector.encoded),
                    v.writtenAt, v.isTombstone, Data(v.payload),
                ])
            }
        }
    }
}
