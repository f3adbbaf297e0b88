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
    public static func insertNewItem(_ db: Database, row: ItemRow, record: [UInt8], state: ItemState, mac: VaultMAC) throws {
        let inserter = NewItemInserter(db, mac: mac)
        try inserter.add(row: row, record: record, state: state)
        try inserter.finish()
    }
}

/// A multi-row `INSERT` with its arguments, ready to run
/// (``NewItemInserter/execute(_:)``). Built off the database thread.
public struct PendingInsert: Sendable {
    let sql: String
    let arguments: StatementArguments
}

/// Turns new items into multi-row `INSERT`s without touching the
/// database, so that an import can build them on another thread than the
/// one writing. Item rows always come before their versions (foreign key).
/// Statements have fixed sizes (64 items, 256 versions; the last ones
/// shorter), so that only a few are prepared and cached. Used by one
/// thread at a time (the buffered values are not `Sendable`).
/// What a bulk import writes besides the items and their versions. Every
/// vault coffer writes has both records and MAC terms; the two lesser
/// settings exist only for `coffer-bench clone`, to measure what each costs
/// (docs/benchmarks.md), and make vaults coffer refuses.
public enum BulkIntegrity: Sendable, Equatable {
    /// Item records and vault-MAC terms.
    case full
    /// Item records, no vault-MAC terms (`--without-mac`).
    case recordsOnly
    /// Neither (`--without-integrity`).
    case none
}

public struct NewItemRows: @unchecked Sendable {
    static let itemsPerStatement = 64
    /// 256 × 8 = 2,048 parameters.
    static let versionsPerStatement = 256
    private var items: [(any DatabaseValueConvertible)?] = []
    private var itemRows = 0
    private var versions: [(any DatabaseValueConvertible)?] = []
    private var versionRows = 0
    /// The MAC terms of the rows buffered here (docs/key-hierarchy.md).
    public let mac: VaultMAC
    /// Column values of ids seen recently (most versions share a few
    /// registers and one or two replicas): one `Data` each, not per row.
    private var registerValues: [RegisterID: Data] = [:]
    private var replicaValues: [ReplicaID: Data] = [:]
    /// `.full` except for `coffer-bench clone`'s baselines.
    let integrity: BulkIntegrity

    public init(mac: VaultMAC, integrity: BulkIntegrity = .full) {
        self.mac = mac
        self.integrity = integrity
        items.reserveCapacity(Self.itemsPerStatement * 8)
        versions.reserveCapacity(Self.versionsPerStatement * 8 * 2)
    }

    /// Buffers one new item and its versions; returns the statements that
    /// became complete.
    public mutating func add(row: ItemRow, record: [UInt8], state: ItemState) -> [PendingInsert] {
        let id = Data(row.id.bytes)
        items.append(id)
        items.append(row.policy.rawValue)
        items.append(row.nameHash.map { Data($0) })
        items.append(row.isDeleted)
        items.append(row.hasConflict)
        items.append(row.createdAt)
        items.append(row.updatedAt)
        if integrity == .none { items.append(nil) } else { items.append(Data(record)) }
        itemRows += 1
        // In the item term's order (its versions' vectors encoded once).
        let listed = RawTerm.Listed.of(state)
        for l in listed {
            let v = l.version
            versions.append(id)
            versions.append(value(of: l.register))
            versions.append(value(of: v.dot.replica))
            versions.append(Int64(v.dot.counter))
            versions.append(Data(l.vector))
            versions.append(v.writtenAt)
            versions.append(v.isTombstone)
            versions.append(Data(v.payload))
            versionRows += 1
        }
        if integrity == .full { mac.toggleItem(row, record: record, versions: listed) }
        return itemRows == Self.itemsPerStatement ? flush(all: false) : []
    }

    /// The statements for everything still buffered.
    public mutating func finish() -> [PendingInsert] { flush(all: true) }

    private mutating func value(of rid: RegisterID) -> Data {
        if let v = registerValues[rid] { return v }
        if registerValues.count >= 64 { registerValues.removeAll(keepingCapacity: true) }
        let v = Data(rid.bytes)
        registerValues[rid] = v
        return v
    }

    private mutating func value(of replica: ReplicaID) -> Data {
        if let v = replicaValues[replica] { return v }
        if replicaValues.count >= 64 { replicaValues.removeAll(keepingCapacity: true) }
        let v = Data(replica.bytes)
        replicaValues[replica] = v
        return v
    }

    /// All buffered items, then versions in full statements (with `all`,
    /// the remainder too; otherwise the remaining versions wait, their
    /// items already written).
    private mutating func flush(all: Bool) -> [PendingInsert] {
        var out: [PendingInsert] = []
        while itemRows > 0 {
            let n = min(itemRows, Self.itemsPerStatement)
            out.append(
                Self.take(
                    "INSERT INTO item (itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record) VALUES ",
                    columns: 8, rows: n, from: &items))
            itemRows -= n
        }
        while versionRows >= Self.versionsPerStatement || (all && versionRows > 0) {
            let n = min(versionRows, Self.versionsPerStatement)
            out.append(
                Self.take(
                    "INSERT INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload) VALUES ",
                    columns: 8, rows: n, from: &versions))
            versionRows -= n
        }
        return out
    }

    /// One `INSERT` of the first `rows` rows buffered in `values`, which
    /// it removes.
    private static func take(
        _ head: String, columns: Int, rows: Int, from values: inout [(any DatabaseValueConvertible)?]
    ) -> PendingInsert {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ",") + ")"
        let sql = head + Array(repeating: row, count: rows).joined(separator: ",")
        let arguments = StatementArguments(values[0..<rows * columns])
        values.removeFirst(rows * columns)
        return PendingInsert(sql: sql, arguments: arguments)
    }
}

/// Writes new items through ``NewItemRows`` on the database thread.
public final class NewItemInserter {
    private let db: Database
    private var rows: NewItemRows

    public init(_ db: Database, mac: VaultMAC) {
        self.db = db
        rows = NewItemRows(mac: mac)
    }

    /// Buffers one new item, its record and its versions (written in
    /// batches).
    public func add(row: ItemRow, record: [UInt8], state: ItemState) throws {
        for p in rows.add(row: row, record: record, state: state) { try execute(p) }
    }

    /// Writes every buffered row.
    public func finish() throws {
        for p in rows.finish() { try execute(p) }
    }

    /// Runs a statement built by ``NewItemRows`` (possibly elsewhere).
    public func execute(_ p: PendingInsert) throws {
        let stmt = try db.cachedStatement(sql: p.sql)
        stmt.setUncheckedArguments(p.arguments)
        try stmt.execute()
    }
}
