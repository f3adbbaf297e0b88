import CofferSync
import Foundation
import GRDB

#if canImport(GRDBSQLite)
internal import GRDBSQLite
#else
internal import SQLite3
#endif

/// The listing hot path (`coffer ls`, `Vault.list()`, lookups by source):
/// every item row with its sealed record (one column of the row since
/// vault format 6), read with direct SQLite calls in one sequential scan
/// instead of GRDB rows. At 10,000 items GRDB's generic row decoding cost
/// more than the rest of the listing (docs/benchmarks.md).
extension Queries {
    public static func listedItems(_ db: Database) throws -> [ListedItem] {
        try listed(db, "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record FROM item ORDER BY itemId")
    }

    /// These items' rows and records (a write's changed items, for the
    /// listing cache's delta), in id order; ids without a row are left out.
    public static func listedItems(_ db: Database, ids: some Collection<ItemID>) throws -> [ListedItem] {
        guard !ids.isEmpty else { return [] }
        // Literals made here from 16-byte ids, never from input text.
        let hex = ids.map { "x'\(Hex.encode($0.bytes))'" }
        return try listed(
            db,
            "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record FROM item WHERE itemId IN (\(hex.joined(separator: ","))) ORDER BY itemId"
        )
    }

    private static func listed(_ db: Database, _ sql: String) throws -> [ListedItem] {
        guard let handle = db.sqliteConnection else { throw StoreError.database("the database is closed") }
        var out: [ListedItem] = []
        try RawStatement(handle, sql).forEachRow { s in
            let idBytes = try s.blob(0, "item.itemId")
            guard idBytes.count == 16, let id = ItemID(bytes: idBytes) else { throw StoreError.damaged("item id of wrong length") }
            guard let policy = SyncPolicy(rawValue: try s.text(1, "item.policy")) else {
                throw StoreError.damaged("item.policy holds an unknown policy")
            }
            let hash = try s.optionalBlob(2, "item.nameHash")
            if let hash, hash.count != 32 { throw StoreError.damaged("item.nameHash has \(hash.count) bytes instead of 32") }
            let row = ItemRow(
                id: id, policy: policy, nameHash: hash, isDeleted: try s.int64(3, "item.isDeleted", in: 0...1) == 1,
                hasConflict: try s.int64(4, "item.hasConflict", in: 0...1) == 1, createdAt: try s.int64(5, "item.createdAt"),
                updatedAt: try s.int64(6, "item.updatedAt"))
            out.append(ListedItem(row: row, record: try s.optionalBlob(7, "item.record")))
        }
        return out
    }
}

/// A prepared statement used through SQLite's C API, with the same
/// checks as SafeRow: a missing column, a wrong type or an out-of-range
/// number is ``StoreError/damaged(_:)``.
struct RawStatement {
    let handle: OpaquePointer
    let sql: String

    init(_ handle: OpaquePointer, _ sql: String) {
        self.handle = handle
        self.sql = sql
    }

    func forEachRow(_ body: (RawRow) throws -> Void) throws {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            let message = String(cString: sqlite3_errmsg(handle))
            if message.hasPrefix("no such") {
                throw StoreError.damaged("the schema differs from a Coffer vault's (\(message))")
            }
            throw StoreError.database(message)
        }
        defer { sqlite3_finalize(stmt) }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else {
                let message = String(cString: sqlite3_errmsg(handle))
                if rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB {
                    throw StoreError.damaged("SQLite reports: \(message)")
                }
                if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { throw StoreError.busy(path: "the vault") }
                throw StoreError.database(message)
            }
            try body(RawRow(stmt: stmt))
        }
    }
}

struct RawRow {
    let stmt: OpaquePointer

    private func check(_ i: Int32, _ name: String) throws(StoreError) {
        guard i < sqlite3_column_count(stmt) else { throw .damaged("column \(name) is missing") }
    }

    func blob(_ i: Int32, _ name: String) throws(StoreError) -> [UInt8] {
        try check(i, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_BLOB else { throw .damaged("\(name) is not a blob") }
        let n = Int(sqlite3_column_bytes(stmt, i))
        guard n > 0, let p = sqlite3_column_blob(stmt, i) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: n))
    }

    func optionalBlob(_ i: Int32, _ name: String) throws(StoreError) -> [UInt8]? {
        try check(i, name)
        if sqlite3_column_type(stmt, i) == SQLITE_NULL { return nil }
        return try blob(i, name)
    }

    func text(_ i: Int32, _ name: String) throws(StoreError) -> String {
        try check(i, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_TEXT, let p = sqlite3_column_text(stmt, i) else {
            throw .damaged("\(name) is not text")
        }
        let n = Int(sqlite3_column_bytes(stmt, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    func int64(_ i: Int32, _ name: String, in range: ClosedRange<Int64> = .min ... .max) throws(StoreError) -> Int64 {
        try check(i, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_INTEGER else { throw .damaged("\(name) is not an integer") }
        let v = sqlite3_column_int64(stmt, i)
        guard range.contains(v) else { throw .damaged("\(name) is out of range (\(v))") }
        return v
    }
}
