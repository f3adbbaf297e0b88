import CofferSync
import Foundation
import GRDB

#if canImport(GRDBSQLite)
internal import GRDBSQLite
#else
internal import SQLite3
#endif

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
    let parameters: InsertParameters
}

/// The values of a multi-row `INSERT`, bound straight to SQLite's
/// statement (``bind(to:_:)``) instead of through GRDB's argument arrays
/// (an existential per value, converted to a `DatabaseValue`, each blob
/// copied by SQLite: a quarter of a 10,000-entry import's writing
/// thread; docs/benchmarks.md). Integers inline; blobs and texts as
/// ranges of one byte buffer, bound without a copy while it lives.
struct InsertParameters: Sendable {
    enum Value: Sendable {
        case null
        case int(Int64)
        /// `count` bytes of ``bytes`` from `start`.
        case blob(start: Int, count: Int)
        /// UTF-8 text, as a blob's range.
        case text(start: Int, count: Int)
    }

    private(set) var values: [Value] = []
    private(set) var bytes: [UInt8] = []

    init(values: Int = 0, bytes: Int = 0) {
        self.values.reserveCapacity(values)
        self.bytes.reserveCapacity(bytes)
    }

    var count: Int { values.count }

    mutating func null() { values.append(.null) }

    mutating func int(_ v: Int64) { values.append(.int(v)) }

    /// As GRDB binds a `Bool`: 0 or 1.
    mutating func bool(_ b: Bool) { values.append(.int(b ? 1 : 0)) }

    mutating func blob(_ b: [UInt8]) {
        values.append(.blob(start: bytes.count, count: b.count))
        bytes.append(contentsOf: b)
    }

    mutating func blob(_ b: [UInt8]?) {
        if let b { blob(b) } else { null() }
    }

    /// 16 bytes, big-endian halves (``Identifier16/bytes``, ``RegisterID/bytes``).
    mutating func blob(high: UInt64, low: UInt64) {
        values.append(.blob(start: bytes.count, count: 16))
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func text(_ s: String) {
        let utf8 = s.utf8
        values.append(.text(start: bytes.count, count: utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// Removes the first `n` values (and their bytes) and returns them.
    mutating func removeFirst(_ n: Int) -> InsertParameters {
        if n >= values.count {
            let all = self
            self = InsertParameters(values: values.count, bytes: bytes.count)
            return all
        }
        // Bytes are appended in value order: the split is where the
        // first remaining blob or text starts.
        var split = bytes.count
        for v in values[n...] {
            switch v {
            case .blob(let start, _), .text(let start, _): split = start
            case .null, .int: continue
            }
            break
        }
        var head = InsertParameters()
        head.values = Array(values[..<n])
        head.bytes = Array(bytes[..<split])
        var rest = InsertParameters(values: values.capacity, bytes: bytes.capacity)
        for v in values[n...] {
            switch v {
            case .blob(let start, let count): rest.values.append(.blob(start: start - split, count: count))
            case .text(let start, let count): rest.values.append(.text(start: start - split, count: count))
            case .null, .int: rest.values.append(v)
            }
        }
        rest.bytes.append(contentsOf: bytes[split...])
        self = rest
        return head
    }

    /// Binds every value to `stmt` (parameters 1…count) and runs `body`
    /// while the bytes stay where they were bound (`SQLITE_STATIC`: no
    /// copy); the bindings are cleared before returning.
    func bind<T>(to stmt: OpaquePointer, _ body: () throws -> T) throws -> T {
        try bytes.withUnsafeBytes { buffer in
            defer { sqlite3_clear_bindings(stmt) }
            for (i, v) in values.enumerated() {
                let index = Int32(truncatingIfNeeded: i + 1)
                let rc: Int32
                switch v {
                case .null:
                    rc = sqlite3_bind_null(stmt, index)
                case .int(let n):
                    rc = sqlite3_bind_int64(stmt, index, n)
                case .blob(let start, let count):
                    // An empty blob stays an empty blob, not NULL.
                    rc =
                        count == 0
                        ? sqlite3_bind_zeroblob(stmt, index, 0)
                        : sqlite3_bind_blob64(stmt, index, buffer.baseAddress! + start, sqlite3_uint64(count), nil)
                case .text(let start, let count):
                    rc =
                        count == 0
                        ? sqlite3_bind_text64(stmt, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
                        : sqlite3_bind_text64(
                            stmt, index, (buffer.baseAddress! + start).assumingMemoryBound(to: CChar.self), sqlite3_uint64(count), nil,
                            UInt8(SQLITE_UTF8))
                }
                guard rc == SQLITE_OK else { throw SQLiteFailure(sqlite3_db_handle(stmt), rc) }
            }
            return try body()
        }
    }
}

/// SQLite's "make a copy" destructor for bound values.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

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
    private var items = InsertParameters(values: NewItemRows.itemsPerStatement * 8, bytes: NewItemRows.itemsPerStatement * 256)
    private var itemRows = 0
    private var versions = InsertParameters(values: NewItemRows.versionsPerStatement * 8 * 2, bytes: NewItemRows.versionsPerStatement * 2 * 256)
    private var versionRows = 0
    /// The MAC terms of the rows buffered here (docs/key-hierarchy.md).
    public let mac: VaultMAC
    /// `.full` except for `coffer-bench clone`'s baselines.
    let integrity: BulkIntegrity

    public init(mac: VaultMAC, integrity: BulkIntegrity = .full) {
        self.mac = mac
        self.integrity = integrity
    }

    /// Buffers one new item and its versions; returns the statements that
    /// became complete.
    public mutating func add(row: ItemRow, record: [UInt8], state: ItemState) -> [PendingInsert] {
        let id = row.id
        items.blob(high: id.high, low: id.low)
        items.text(row.policy.rawValue)
        items.blob(row.nameHash)
        items.bool(row.isDeleted)
        items.bool(row.hasConflict)
        items.int(row.createdAt)
        items.int(row.updatedAt)
        if integrity == .none { items.null() } else { items.blob(record) }
        itemRows += 1
        // In the item term's order (its versions' vectors encoded once).
        let listed = RawTerm.Listed.of(state)
        for l in listed {
            let v = l.version
            versions.blob(high: id.high, low: id.low)
            versions.blob(high: l.register.high, low: l.register.low)
            versions.blob(high: v.dot.replica.high, low: v.dot.replica.low)
            versions.int(Int64(v.dot.counter))
            versions.blob(l.vector)
            versions.int(v.writtenAt)
            versions.bool(v.isTombstone)
            versions.blob(v.payload)
            versionRows += 1
        }
        if integrity == .full { mac.toggleItem(row, record: record, versions: listed) }
        return itemRows == Self.itemsPerStatement ? flush(all: false) : []
    }

    /// The statements for everything still buffered.
    public mutating func finish() -> [PendingInsert] { flush(all: true) }

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
    private static func take(_ head: String, columns: Int, rows: Int, from values: inout InsertParameters) -> PendingInsert {
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ",") + ")"
        let sql = head + Array(repeating: row, count: rows).joined(separator: ",")
        return PendingInsert(sql: sql, parameters: values.removeFirst(rows * columns))
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
        // GRDB's cache prepares each statement size once; the values are
        // bound and the rows stepped through SQLite's C API, as
        // ReadConnection reads (the INSERT returns no rows).
        let stmt = try db.cachedStatement(sql: p.sql).sqliteStatement
        sqlite3_reset(stmt)
        try p.parameters.bind(to: stmt) {
            defer { sqlite3_reset(stmt) }
            let rc = sqlite3_step(stmt)
            guard rc == SQLITE_DONE else { throw SQLiteFailure(db.sqliteConnection, rc) }
        }
    }
}
