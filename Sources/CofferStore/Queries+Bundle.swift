import CofferSync
import Foundation
import GRDB

/// Queries for bundle export and import (docs/bundle-format.md). Cached
/// statements and positional columns: these run once per item or per
/// version over whole vaults.
extension Queries {
    /// The `WHERE` clause and arguments selecting what a bundle carries:
    /// versions of `sync` items, and for a delta only those whose dot
    /// counter exceeds `since` for the dot's replica.
    private static func exportFilter(since: VersionVector?) -> (sql: String, args: StatementArguments) {
        guard let since, !since.isEmpty else { return ("i.policy = 'sync'", []) }
        let cases = since.entries.map { _ in "WHEN ? THEN ?" }.joined(separator: " ")
        var args: [(any DatabaseValueConvertible)?] = []
        for e in since.entries {
            args.append(Data(e.replica.bytes))
            args.append(Int64(e.counter))
        }
        return ("i.policy = 'sync' AND fv.counter > (CASE fv.replicaId \(cases) ELSE 0 END)", StatementArguments(args))
    }

    /// For a delta against `since`, a subquery selecting the primary keys
    /// of the versions it carries through the dot index: one range per
    /// replica id found in the vault (a seek each), `counter > since[r]`.
    /// A segment after one edit reads a few index entries instead of
    /// every version of the vault. nil for a full export, and for a vault
    /// with more replica ids than a compound query may hold (the filter
    /// of ``exportFilter(since:)`` then scans).
    private static func deltaKeys(_ db: Database, since: VersionVector?) throws -> (sql: String, args: StatementArguments)? {
        guard let since, !since.isEmpty else { return nil }
        var replicas: [Data] = []
        let next = try db.cachedStatement(sql: "SELECT replicaId FROM fieldVersion WHERE replicaId > ? ORDER BY replicaId LIMIT 1")
        var last = Data()
        while let r = try Data.fetchOne(next, arguments: [last]) {
            replicas.append(r)
            if replicas.count > 200 { return nil }
            last = r
        }
        guard !replicas.isEmpty else { return ("SELECT itemId, registerId, replicaId, counter FROM fieldVersion WHERE 0", []) }
        var counters: [Data: Int64] = [:]
        for e in since.entries { counters[Data(e.replica.bytes)] = Int64(e.counter) }
        let sql = replicas.map { _ in "SELECT itemId, registerId, replicaId, counter FROM fieldVersion WHERE replicaId = ? AND counter > ?" }
            .joined(separator: " UNION ALL ")
        var args: [(any DatabaseValueConvertible)?] = []
        for r in replicas {
            args.append(r)
            args.append(counters[r] ?? 0)
        }
        return (sql, StatementArguments(args))
    }

    /// Number of items a bundle will carry.
    public static func exportItemCount(_ db: Database, since: VersionVector?) throws -> UInt64 {
        if let keys = try deltaKeys(db, since: since) {
            let n =
                try Int64.fetchOne(
                    db,
                    sql: "SELECT count(DISTINCT d.itemId) FROM (\(keys.sql)) d JOIN item i ON i.itemId = d.itemId WHERE i.policy = 'sync'",
                    arguments: keys.args) ?? 0
            return UInt64(n)
        }
        if since == nil || since!.isEmpty {
            // Every version of every `sync` item: count items, not versions
            // (no scan of the version table, no DISTINCT).
            let n =
                try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM item i
                        WHERE i.policy = 'sync' AND EXISTS (SELECT 1 FROM fieldVersion fv WHERE fv.itemId = i.itemId)
                        """) ?? 0
            return UInt64(n)
        }
        let f = exportFilter(since: since)
        let n =
            try Int64.fetchOne(
                db,
                sql: "SELECT count(DISTINCT fv.itemId) FROM fieldVersion fv JOIN item i ON i.itemId = fv.itemId WHERE \(f.sql)",
                arguments: f.args) ?? 0
        return UInt64(n)
    }

    /// One version selected for export, as stored (the encoded vector and
    /// payload are copied to the bundle as they are).
    public struct ExportVersion {
        public var item: ItemID
        public var register: Data
        public var replica: Data
        public var counter: UInt64
        public var vector: Data
        public var writtenAt: Int64
        public var isTombstone: Bool
        public var payload: Data
    }

    /// Calls `body` once per exported version, sorted by item id, register
    /// id, dot replica and dot counter: the order of a bundle's records and
    /// of the versions inside one (docs/bundle-format.md). Streams from a
    /// cursor; nothing is held between calls.
    public static func forEachExportVersion(_ db: Database, since: VersionVector?, _ body: (ExportVersion) throws -> Void) throws {
        let rows: RowCursor
        if let keys = try deltaKeys(db, since: since) {
            rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT fv.itemId, fv.registerId, fv.replicaId, fv.counter, fv.vector, fv.writtenAt, fv.isTombstone, fv.payload
                    FROM (\(keys.sql)) d
                    JOIN fieldVersion fv ON fv.itemId = d.itemId AND fv.registerId = d.registerId AND fv.replicaId = d.replicaId AND fv.counter = d.counter
                    JOIN item i ON i.itemId = fv.itemId
                    WHERE i.policy = 'sync'
                    ORDER BY fv.itemId, fv.registerId, fv.replicaId, fv.counter
                    """,
                arguments: keys.args)
        } else {
            let f = exportFilter(since: since)
            rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT fv.itemId, fv.registerId, fv.replicaId, fv.counter, fv.vector, fv.writtenAt, fv.isTombstone, fv.payload
                    FROM fieldVersion fv JOIN item i ON i.itemId = fv.itemId
                    WHERE \(f.sql)
                    ORDER BY fv.itemId, fv.registerId, fv.replicaId, fv.counter
                    """,
                arguments: f.args)
        }
        var lastKey = Data()
        var item: ItemID?
        while let row = try rows.next() {
            let key = try row.blob(at: 0, name: "fieldVersion.itemId")
            let register = try row.blob(at: 1, name: "fieldVersion.registerId", length: 16)
            let replica = try row.blob(at: 2, name: "fieldVersion.replicaId", length: 16)
            if key != lastKey {
                // About 5 rows per item: decode the id once per item.
                item = ItemID(bytes: [UInt8](key))
                lastKey = key
            }
            guard let item, register.count == 16, replica.count == 16 else {
                throw StoreError.database("an identifier of wrong length")
            }
            try body(
                ExportVersion(
                    item: item, register: register, replica: replica,
                    counter: try row.counter(at: 3, name: "fieldVersion.counter", minimum: 1),
                    vector: try row.blob(at: 4, name: "fieldVersion.vector"),
                    writtenAt: try row.int64(at: 5, name: "fieldVersion.writtenAt"),
                    isTombstone: try row.bool(at: 6, name: "fieldVersion.isTombstone"),
                    payload: try row.blob(at: 7, name: "fieldVersion.payload")))
        }
    }

    /// A version from columns replicaId, counter, vector, writtenAt,
    /// isTombstone, payload starting at `i` (GRDB's rows and ``RawRow``s
    /// alike).
    static func positionalVersion(_ row: some CheckedColumns, from i: Int, table: String = "fieldVersion") throws -> FieldVersion {
        guard let replica = ReplicaID(bytes: try row.bytes(at: i, name: "\(table).replicaId", length: 16)) else {
            throw StoreError.damaged("replica id of wrong length")
        }
        let vector: VersionVector
        do { vector = try VersionVector(decoding: try row.bytes(at: i + 2, name: "\(table).vector", length: nil)) } catch {
            throw StoreError.damaged("\(table).vector is malformed")
        }
        return FieldVersion(
            dot: Dot(replica: replica, counter: try row.storedCounter(at: i + 1, name: "\(table).counter", minimum: 1)),
            vector: vector, writtenAt: try row.int64(at: i + 3, name: "\(table).writtenAt", in: .min ... .max),
            isTombstone: try row.storedBool(at: i + 4, name: "\(table).isTombstone"),
            payload: try row.bytes(at: i + 5, name: "\(table).payload", length: nil))
    }

    /// ``itemRow(_:id:)`` with a cached statement.
    public static func cachedItemRow(_ db: Database, id: ItemID) throws -> ItemRow? { try cachedItemRow(ReadConnection(db), id: id) }

    /// The row of item `id`, nil when it has none.
    public static func cachedItemRow(_ db: ReadConnection, id: ItemID) throws -> ItemRow? {
        try db.fetchOne(
            "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt FROM item WHERE itemId = ?", [.blob(id.bytes)],
            cached: true
        ) { try ItemRow(positional: $0) }
    }

    /// ``itemState(_:id:)`` with a cached statement.
    public static func cachedItemState(_ db: Database, id: ItemID) throws -> ItemState { try cachedItemState(ReadConnection(db), id: id) }

    /// All current versions of item `id`, each register's in dot order.
    public static func cachedItemState(_ db: ReadConnection, id: ItemID) throws -> ItemState {
        var state = ItemState(id: id)
        try db.forEachRow(
            "SELECT registerId, replicaId, counter, vector, writtenAt, isTombstone, payload FROM fieldVersion WHERE itemId = ?", [.blob(id.bytes)],
            cached: true
        ) { row in
            guard let rid = RegisterID(bytes: try row.bytes(at: 0, name: "fieldVersion.registerId", length: 16)) else { return }
            state.registers[rid, default: []].append(try positionalVersion(row, from: 1))
        }
        for k in state.registers.keys { state.registers[k]?.sort { $0.dot < $1.dot } }
        return state
    }
}
