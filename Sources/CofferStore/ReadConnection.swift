import CofferSync
import GRDB

#if canImport(GRDBSQLite)
internal import GRDBSQLite
#else
internal import SQLite3
#endif

/// A read transaction on the vault as the queries of the read verbs see
/// it: SQLite's C API on a connection handle, either the store's own
/// direct connection (``VaultStore/readDirect(_:)``: `get`, `show`, `otp`,
/// `ls` and `find` never build GRDB's queue, whose set-up cost a third of a
/// `get`; docs/benchmarks.md) or GRDB's, inside one of its transactions
/// (``init(_:)``), so each query has one implementation for both. Rows are
/// read through ``RawRow``, with SafeRow's checks: a missing column, a
/// value of the wrong type or out of range is ``StoreError/damaged(_:)``.
public struct ReadConnection {
    let handle: OpaquePointer
    /// GRDB's connection when the read runs inside one of its
    /// transactions: its statement cache keeps the statements of queries
    /// that a bulk write runs once per item.
    private let grdb: Database?

    init(direct handle: OpaquePointer) {
        self.handle = handle
        self.grdb = nil
    }

    /// The connection of a GRDB transaction (a write's, or a read's).
    public init(_ db: Database) throws {
        guard let handle = db.sqliteConnection else { throw StoreError.database("the database is closed") }
        self.handle = handle
        self.grdb = db
    }

    /// A value bound to a statement's `?`.
    enum Argument {
        case blob([UInt8])
        case text(String)
    }

    /// Runs `sql` with `arguments`, calling `body` for each row. `cached`:
    /// on GRDB's connection, keep the prepared statement in GRDB's cache
    /// (for queries run once per item); never for SQL made from values.
    func forEachRow(_ sql: String, _ arguments: [Argument] = [], cached: Bool = false, _ body: (RawRow) throws -> Void) throws {
        let stmt: OpaquePointer
        let owned: Bool
        if cached, let grdb {
            stmt = try grdb.cachedStatement(sql: sql).sqliteStatement
            owned = false
        } else {
            var prepared: OpaquePointer?
            let rc = sqlite3_prepare_v2(handle, sql, -1, &prepared, nil)
            guard rc == SQLITE_OK, let prepared else {
                sqlite3_finalize(prepared)
                throw SQLiteFailure(handle, rc)
            }
            stmt = prepared
            owned = true
        }
        defer {
            if owned {
                sqlite3_finalize(stmt)
            } else {
                sqlite3_reset(stmt)
                sqlite3_clear_bindings(stmt)
            }
        }
        for (i, argument) in arguments.enumerated() {
            let index = Int32(truncatingIfNeeded: i + 1)
            let rc: Int32
            switch argument {
            case .blob(let bytes):
                rc = bytes.withUnsafeBytes { sqlite3_bind_blob64(stmt, index, $0.baseAddress, sqlite3_uint64(bytes.count), sqliteTransient) }
            case .text(let text):
                rc = sqlite3_bind_text64(stmt, index, text, sqlite3_uint64(text.utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
            guard rc == SQLITE_OK else { throw SQLiteFailure(handle, rc) }
        }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw SQLiteFailure(handle, rc) }
            try body(RawRow(stmt: stmt))
        }
    }

    /// The first row's `read`, nil when there is none.
    func fetchOne<T>(_ sql: String, _ arguments: [Argument] = [], cached: Bool = false, _ read: (RawRow) throws -> T) throws -> T? {
        var out: T?
        try forEachRow(sql, arguments, cached: cached) { row in
            if out == nil { out = try read(row) }
        }
        return out
    }
}

/// SQLite's "make a copy" destructor for bound values.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A failure SQLite reported through its C API: translated to a
/// ``StoreError`` where the store knows the file's path
/// (``VaultStore/translate(code:message:path:)``), as GRDB's errors are.
struct SQLiteFailure: Error {
    /// The primary result code.
    let code: Int32
    let message: String

    init(_ handle: OpaquePointer?, _ rc: Int32) {
        code = rc & 0xff
        message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
    }
}

/// Columns read by position with SafeRow's checks, from GRDB's rows and
/// from SQLite's statements (``RawRow``) alike: the decoding of a stored
/// value (an item row, a field version) is written once for both paths.
protocol CheckedColumns {
    func bytes(at index: Int, name: String, length: Int?) throws(StoreError) -> [UInt8]
    /// Nil for NULL.
    func optionalBytes(at index: Int, name: String) throws(StoreError) -> [UInt8]?
    func text(at index: Int, name: String) throws(StoreError) -> String
    func int64(at index: Int, name: String, in range: ClosedRange<Int64>) throws(StoreError) -> Int64
}

extension CheckedColumns {
    /// A counter: 0 ... 2^53 (docs/sync.md bounds every counter).
    func storedCounter(at index: Int, name: String, minimum: Int64 = 0) throws(StoreError) -> UInt64 {
        UInt64(try int64(at: index, name: name, in: minimum...StoredLimits.maxCounter))
    }

    func storedBool(at index: Int, name: String) throws(StoreError) -> Bool {
        try int64(at: index, name: name, in: 0...1) == 1
    }
}

extension Row: CheckedColumns {
    func bytes(at index: Int, name: String, length: Int?) throws(StoreError) -> [UInt8] {
        Array(try blob(at: index, name: name, length: length))
    }

    func optionalBytes(at index: Int, name: String) throws(StoreError) -> [UInt8]? {
        try optionalBlob(at: index, name: name).map { Array($0) }
    }

    func text(at index: Int, name: String) throws(StoreError) -> String {
        guard case .string(let s) = try storedValue(at: index, name: name).storage else { throw .damaged("\(name) is not text") }
        return s
    }
}

/// The current row of a statement stepped through SQLite's C API.
struct RawRow: CheckedColumns {
    let stmt: OpaquePointer

    private func column(_ index: Int, _ name: String) throws(StoreError) -> Int32 {
        guard index >= 0, index < Int(sqlite3_column_count(stmt)) else { throw .damaged("column \(name) is missing") }
        return Int32(truncatingIfNeeded: index)
    }

    /// The position of the column called `column` (SQLite compares names
    /// without case, as GRDB's rows do), for `SELECT *`.
    func index(of column: String, table: String) throws(StoreError) -> Int {
        for i in 0..<sqlite3_column_count(stmt) {
            if let name = sqlite3_column_name(stmt, i), sqlite3_stricmp(name, column) == 0 { return Int(i) }
        }
        throw .damaged("column \(table).\(column) is missing")
    }

    func isNull(at index: Int, name: String) throws(StoreError) -> Bool {
        sqlite3_column_type(stmt, try column(index, name)) == SQLITE_NULL
    }

    func bytes(at index: Int, name: String, length: Int? = nil) throws(StoreError) -> [UInt8] {
        let i = try column(index, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_BLOB else { throw .damaged("\(name) is not a blob") }
        let n = Int(sqlite3_column_bytes(stmt, i))
        if let length, n != length { throw .damaged("\(name) has \(n) bytes instead of \(length)") }
        guard n > 0, let p = sqlite3_column_blob(stmt, i) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: n))
    }

    /// The value's bytes whatever its type (a text's UTF-8, a number's
    /// digits), as SQLite gives them.
    func rawBytes(at index: Int) throws(StoreError) -> [UInt8] {
        let i = try column(index, "column \(index)")
        // The conversion happens in sqlite3_column_blob: ask the size after.
        let p = sqlite3_column_blob(stmt, i)
        let n = Int(sqlite3_column_bytes(stmt, i))
        guard n > 0, let p else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: n))
    }

    func optionalBytes(at index: Int, name: String) throws(StoreError) -> [UInt8]? {
        if try isNull(at: index, name: name) { return nil }
        return try bytes(at: index, name: name, length: nil)
    }

    func text(at index: Int, name: String) throws(StoreError) -> String {
        let i = try column(index, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_TEXT, let p = sqlite3_column_text(stmt, i) else {
            throw .damaged("\(name) is not text")
        }
        let n = Int(sqlite3_column_bytes(stmt, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    func optionalText(at index: Int, name: String) throws(StoreError) -> String? {
        if try isNull(at: index, name: name) { return nil }
        return try text(at: index, name: name)
    }

    func int64(at index: Int, name: String, in range: ClosedRange<Int64> = .min ... .max) throws(StoreError) -> Int64 {
        let i = try column(index, name)
        guard sqlite3_column_type(stmt, i) == SQLITE_INTEGER else { throw .damaged("\(name) is not an integer") }
        let v = sqlite3_column_int64(stmt, i)
        guard range.contains(v) else { throw .damaged("\(name) is out of range (\(v))") }
        return v
    }

    // By name, for `SELECT *` (a renamed column is "missing", as SafeRow says).

    func bytes(_ column: String, table: String, length: Int? = nil) throws(StoreError) -> [UInt8] {
        try bytes(at: try index(of: column, table: table), name: "\(table).\(column)", length: length)
    }

    func int64(_ column: String, table: String, in range: ClosedRange<Int64> = .min ... .max) throws(StoreError) -> Int64 {
        try int64(at: try index(of: column, table: table), name: "\(table).\(column)", in: range)
    }

    func uint32(_ column: String, table: String, in range: ClosedRange<UInt32>) throws(StoreError) -> UInt32 {
        UInt32(truncatingIfNeeded: try int64(column, table: table, in: Int64(range.lowerBound)...Int64(range.upperBound)))
    }
}
