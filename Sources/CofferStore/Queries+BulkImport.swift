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
        let inserter = NewItemInserter(db)
        try inserter.add(row: row, state: state)
        try inserter.finish()
    }
}

/// Inserts items that the vault does not hold yet, many rows per
/// statement: per-statement work (GRDB's argument handling, SQLite's
/// statement start and reset) is paid once per up to 256 rows instead of
/// once per row. Rows are buffered; ``finish()`` writes the rest. Item rows
/// are always written before their versions (foreign key).
public final class NewItemInserter {
    private let db: Database
    /// Rows per multi-row `INSERT` of versions (256 × 8 = 2,048
    /// parameters) and of items. Fixed sizes, so that only these two
    /// statements (and the shorter last ones) are prepared and cached.
    static let rowsPerStatement = 256
    static let itemsPerStatement = 64
    private var items: [(any DatabaseValueConvertible)?] = []
    private var itemRows = 0
    private var versions: [(any DatabaseValueConvertible)?] = []
    private var versionRows = 0
    /// Column values of ids seen recently (most versions share a few
    /// registers and one or two replicas): one `Data` each, not per row.
    private var registerValues: [RegisterID: Data] = [:]
    private var replicaValues: [ReplicaID: Data] = [:]

    public init(_ db: Database) {
        self.db = db
        items.reserveCapacity(Self.rowsPerStatement * 7)
        versions.reserveCapacity(Self.rowsPerStatement * 8 * 2)
    }

    /// Buffers one new item and its versions.
    public func add(row: ItemRow, state: ItemState) throws {
        let id = Data(row.id.bytes)
        items.append(id)
        items.append(row.policy.rawValue)
        items.append(row.nameHash.map { Data($0) })
        items.append(row.isDeleted)
        items.append(row.hasConflict)
        items.append(row.createdAt)
        items.append(row.updatedAt)
        itemRows += 1
        for (rid, list) in state.registers {
            let register = value(of: rid)
            for v in list {
                versions.append(id)
                versions.append(register)
                versions.append(value(of: v.dot.replica))
                versions.append(Int64(v.dot.counter))
                versions.append(Data(v.vector.encoded))
                versions.append(v.writtenAt)
                versions.append(v.isTombstone)
                versions.append(Data(v.payload))
                versionRows += 1
            }
        }
        if itemRows == Self.itemsPerStatement { try flush(all: false) }
    }

    /// Writes every buffered row.
    public func finish() throws { try flush(all: true) }

    private func value(of rid: RegisterID) -> Data {
        if let v = registerValues[rid] { return v }
        if registerValues.count >= 64 { registerValues.removeAll(keepingCapacity: true) }
        let v = Data(rid.bytes)
        registerValues[rid] = v
        return v
    }

    private func value(of replica: ReplicaID) -> Data {
        if let v = replicaValues[replica] { return v }
        if replicaValues.count >= 64 { replicaValues.removeAll(keepingCapacity: true) }
        let v = Data(replica.bytes)
        replicaValues[replica] = v
        return v
    }

    /// Writes all buffered items, then versions in full statements (and,
    /// with `all`, the remainder; otherwise the remaining versions wait,
    /// their items already written).
    private func flush(all: Bool) throws {
        while itemRows > 0 {
            let n = min(itemRows, Self.itemsPerStatement)
            try execute(
                "INSERT INTO item (itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt) VALUES ",
                columns: 7, rows: n, from: &items)
            itemRows -= n
        }
        while versionRows >= Self.rowsPerStatement || (all && versionRows > 0) {
            let n = min(versionRows, Self.rowsPerStatement)
            try execute(
                "INSERT INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload) VALUES ",
                columns: 8, rows: n, from: &versions)
            versionRows -= n
        }
    }

    /// One `INSERT` of the first `rows` rows buffered in `values`, which
    /// it removes.
    private func execute(_ head: String, columns: Int, rows: Int, from values: inout [(any DatabaseValueConvertible)?]) throws {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ",") + ")"
        let stmt = try db.cachedStatement(sql: head + Array(repeating: row, count: rows).joined(separator: ","))
        stmt.setUncheckedArguments(StatementArguments(values[0..<rows * columns]))
        try stmt.execute()
        values.removeFirst(rows * columns)
    }
}
