import CofferSync
import Foundation
import GRDB

/// Throwing, range-checked access to the columns of a row read from the
/// vault file. The file is input like any other: a renamed column, a text
/// where a number belongs or a number out of range is
/// ``StoreError/damaged(_:)`` (exit 65), never a trap. GRDB's
/// `row["column"] as T` subscripts end the process on a missing column or
/// a failed conversion; nothing in CofferStore uses them.
extension Row {
    /// The raw value of `column`, or `damaged` when the row has no such column.
    func storedValue(_ column: String, table: String) throws(StoreError) -> DatabaseValue {
        guard hasColumn(column) else { throw .damaged("column \(table).\(column) is missing") }
        return self[column] as DatabaseValue
    }

    /// The raw value at position `index`.
    func storedValue(at index: Int, name: String) throws(StoreError) -> DatabaseValue {
        guard index >= 0, index < count else { throw .damaged("column \(name) is missing") }
        return self[index] as DatabaseValue
    }

    func int64(_ column: String, table: String, in range: ClosedRange<Int64> = .min ... .max) throws(StoreError) -> Int64 {
        try Self.int64(try storedValue(column, table: table), name: "\(table).\(column)", in: range)
    }

    func optionalInt64(_ column: String, table: String) throws(StoreError) -> Int64? {
        let v = try storedValue(column, table: table)
        if v.isNull { return nil }
        return try Self.int64(v, name: "\(table).\(column)", in: .min ... .max)
    }

    func uint32(_ column: String, table: String, in range: ClosedRange<UInt32>) throws(StoreError) -> UInt32 {
        let v = try int64(column, table: table, in: Int64(range.lowerBound)...Int64(range.upperBound))
        return UInt32(v)
    }

    /// A counter: 0 ... 2^53 (docs/sync.md bounds every counter).
    func counter(_ column: String, table: String, minimum: Int64 = 0) throws(StoreError) -> UInt64 {
        UInt64(try int64(column, table: table, in: minimum...StoredLimits.maxCounter))
    }

    func bool(_ column: String, table: String) throws(StoreError) -> Bool {
        try int64(column, table: table, in: 0...1) == 1
    }

    func blob(_ column: String, table: String, length: Int? = nil) throws(StoreError) -> Data {
        try Self.blob(try storedValue(column, table: table), name: "\(table).\(column)", length: length)
    }

    func optionalBlob(_ column: String, table: String) throws(StoreError) -> Data? {
        let v = try storedValue(column, table: table)
        if v.isNull { return nil }
        return try Self.blob(v, name: "\(table).\(column)", length: nil)
    }

    func text(_ column: String, table: String) throws(StoreError) -> String {
        let v = try storedValue(column, table: table)
        guard case .string(let s) = v.storage else { throw .damaged("\(table).\(column) is not text") }
        return s
    }

    func optionalText(_ column: String, table: String) throws(StoreError) -> String? {
        let v = try storedValue(column, table: table)
        if v.isNull { return nil }
        guard case .string(let s) = v.storage else { throw .damaged("\(table).\(column) is not text") }
        return s
    }

    // Positional forms, for statements that name their columns.

    func int64(at index: Int, name: String, in range: ClosedRange<Int64> = .min ... .max) throws(StoreError) -> Int64 {
        try Self.int64(try storedValue(at: index, name: name), name: name, in: range)
    }

    func counter(at index: Int, name: String, minimum: Int64 = 0) throws(StoreError) -> UInt64 {
        UInt64(try int64(at: index, name: name, in: minimum...StoredLimits.maxCounter))
    }

    func bool(at index: Int, name: String) throws(StoreError) -> Bool {
        try int64(at: index, name: name, in: 0...1) == 1
    }

    func blob(at index: Int, name: String, length: Int? = nil) throws(StoreError) -> Data {
        try Self.blob(try storedValue(at: index, name: name), name: name, length: length)
    }

    func optionalBlob(at index: Int, name: String) throws(StoreError) -> Data? {
        let v = try storedValue(at: index, name: name)
        if v.isNull { return nil }
        return try Self.blob(v, name: name, length: nil)
    }

    static func int64(_ v: DatabaseValue, name: String, in range: ClosedRange<Int64>) throws(StoreError) -> Int64 {
        guard case .int64(let n) = v.storage else { throw .damaged("\(name) is not an integer") }
        guard range.contains(n) else { throw .damaged("\(name) is out of range (\(n))") }
        return n
    }

    static func blob(_ v: DatabaseValue, name: String, length: Int?) throws(StoreError) -> Data {
        guard case .blob(let d) = v.storage else { throw .damaged("\(name) is not a blob") }
        if let length, d.count != length { throw .damaged("\(name) has \(d.count) bytes instead of \(length)") }
        return d
    }
}

/// Ranges of the numbers stored in a vault file.
public enum StoredLimits {
    /// Counters and dots: at most 2^53 (docs/sync.md).
    public static let maxCounter: Int64 = 1 << 53
    /// KDF parameters: positive and within libargon2's 32-bit arguments
    /// (``KDFParameters/validate()`` applies the tighter limits).
    public static let kdfParameter: ClosedRange<UInt32> = 1...UInt32.max
}
