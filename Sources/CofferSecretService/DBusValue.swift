import CSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A D-Bus value as sd-bus reads and writes it: enough of the type system
/// for the Secret Service API (basic types, arrays, byte arrays, dictionary
/// entries, structures, variants).
indirect enum DBusValue: Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`, read and written in one piece.
    case bytes([UInt8])
    /// An array of elements of the given signature (dictionaries are
    /// arrays of ``dictEntry``).
    case array(String, [DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])
    case variant(DBusValue)

    var signature: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .bytes: return "ay"
        case .array(let element, _): return "a" + element
        case .dictEntry(let k, let v): return "{" + k.signature + v.signature + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }

    /// `a{ss}` from a dictionary, sorted by key.
    static func stringDict(_ d: [String: String]) -> DBusValue {
        .array("{ss}", d.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .string($0.value)) })
    }

    /// `ao`.
    static func paths(_ p: [String]) -> DBusValue { .array("o", p.map { .objectPath($0) }) }

    /// `a{sv}` from (name, value) pairs.
    static func properties(_ p: [(String, DBusValue)]) -> DBusValue {
        .array("{sv}", p.map { .dictEntry(.string($0.0), .variant($0.1)) })
    }

    var string: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): return s
        default: return nil
        }
    }

    var objectPath: String? {
        if case .objectPath(let s) = self { return s }
        return nil
    }

    var boolValue: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    /// The value inside a variant (or the value itself).
    var unwrapped: DBusValue {
        if case .variant(let v) = self { return v.unwrapped }
        return self
    }

    /// `a{ss}` as a dictionary; nil for anything else or a key given twice.
    var stringDictionary: [String: String]? {
        guard case .array(let sig, let entries) = self, sig == "{ss}" else { return nil }
        var out: [String: String] = [:]
        for e in entries {
            guard case .dictEntry(.string(let k), .string(let v)) = e, out[k] == nil else { return nil }
            out[k] = v
        }
        return out
    }

    /// `a{sv}` as a dictionary of unwrapped values.
    var variantDictionary: [String: DBusValue]? {
        guard case .array(let sig, let entries) = self, sig == "{sv}" else { return nil }
        var out: [String: DBusValue] = [:]
        for e in entries {
            guard case .dictEntry(.string(let k), .variant(let v)) = e else { return nil }
            out[k] = v
        }
        return out
    }

    /// `ao` as paths.
    var pathArray: [String]? {
        guard case .array(let sig, let entries) = self, sig == "o" else { return nil }
        return entries.compactMap(\.objectPath)
    }
}

/// A failure sd-bus reported (a negative errno).
struct SDBusFailure: Error {
    var call: String
    var code: Int32
    var text: String { "\(call): \(String(cString: strerror(code)))" }
}

@discardableResult
func check(_ r: Int32, _ call: String) throws(SDBusFailure) -> Int32 {
    guard r >= 0 else { throw SDBusFailure(call: call, code: -r) }
    return r
}

/// Reads a message's remaining arguments.
enum DBusReader {
    static func readAll(_ m: OpaquePointer) throws(SDBusFailure) -> [DBusValue] {
        var out: [DBusValue] = []
        while let (type, contents) = try peek(m) {
            out.append(try read(m, type: type, contents: contents))
        }
        return out
    }

    private static func peek(_ m: OpaquePointer) throws(SDBusFailure) -> (CChar, String)? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = try check(sd_bus_message_peek_type(m, &type, &contents), "sd_bus_message_peek_type")
        if r == 0 { return nil }
        return (type, contents.map { String(cString: $0) } ?? "")
    }

    private static func basic<T>(_ m: OpaquePointer, _ type: CChar, _ initial: T) throws(SDBusFailure) -> T {
        var v = initial
        try check(withUnsafeMutablePointer(to: &v) { sd_bus_message_read_basic(m, type, $0) }, "sd_bus_message_read_basic")
        return v
    }

    private static func text(_ m: OpaquePointer, _ type: CChar) throws(SDBusFailure) -> String {
        var p: UnsafePointer<CChar>? = nil
        try check(withUnsafeMutablePointer(to: &p) { sd_bus_message_read_basic(m, type, $0) }, "sd_bus_message_read_basic")
        return p.map { String(cString: $0) } ?? ""
    }

    private static func read(_ m: OpaquePointer, type: CChar, contents: String) throws(SDBusFailure) -> DBusValue {
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try basic(m, type, UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try basic(m, type, Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int32(Int32(try basic(m, type, Int16(0))))
        case UInt8(ascii: "q"): return .uint32(UInt32(try basic(m, type, UInt16(0))))
        case UInt8(ascii: "i"), UInt8(ascii: "h"): return .int32(try basic(m, type, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(m, type, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(m, type, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(m, type, UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(m, type, Double(0)))
        case UInt8(ascii: "s"): return .string(try text(m, type))
        case UInt8(ascii: "o"): return .objectPath(try text(m, type))
        case UInt8(ascii: "g"): return .signature(try text(m, type))
        case UInt8(ascii: "a"):
            if contents == "y" {
                var ptr: UnsafeRawPointer? = nil
                var size = 0
                try check(sd_bus_message_read_array(m, CChar(UInt8(ascii: "y")), &ptr, &size), "sd_bus_message_read_array")
                guard let ptr, size > 0 else { return .bytes([]) }
                return .bytes(Array(UnsafeRawBufferPointer(start: ptr, count: size)))
            }
            try check(sd_bus_message_enter_container(m, type, contents), "sd_bus_message_enter_container")
            var elements: [DBusValue] = []
            while let (t, c) = try peek(m) { elements.append(try read(m, type: t, contents: c)) }
            try check(sd_bus_message_exit_container(m), "sd_bus_message_exit_container")
            return .array(contents, elements)
        case UInt8(ascii: "r"), UInt8(ascii: "e"), UInt8(ascii: "v"):
            try check(sd_bus_message_enter_container(m, type, contents), "sd_bus_message_enter_container")
            var inner: [DBusValue] = []
            while let (t, c) = try peek(m) { inner.append(try read(m, type: t, contents: c)) }
            try check(sd_bus_message_exit_container(m), "sd_bus_message_exit_container")
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "r"): return .structure(inner)
            case UInt8(ascii: "e"):
                guard inner.count == 2 else { throw SDBusFailure(call: "dictionary entry", code: EBADMSG) }
                return .dictEntry(inner[0], inner[1])
            default:
                guard inner.count == 1 else { throw SDBusFailure(call: "variant", code: EBADMSG) }
                return .variant(inner[0])
            }
        default:
            throw SDBusFailure(call: "unsupported D-Bus type", code: EBADMSG)
        }
    }
}

/// Appends values to a message.
enum DBusWriter {
    static func append(_ m: OpaquePointer, _ values: [DBusValue]) throws(SDBusFailure) {
        for v in values { try append(m, v) }
    }

    private static func basic<T>(_ m: OpaquePointer, _ type: Character, _ value: T) throws(SDBusFailure) {
        var v = value
        try check(
            withUnsafePointer(to: &v) { sd_bus_message_append_basic(m, CChar(type.asciiValue!), UnsafeRawPointer($0)) },
            "sd_bus_message_append_basic")
    }

    private static func container(_ m: OpaquePointer, _ type: Character, _ contents: String, _ body: () throws(SDBusFailure) -> Void)
        throws(SDBusFailure)
    {
        try check(sd_bus_message_open_container(m, CChar(type.asciiValue!), contents), "sd_bus_message_open_container")
        try body()
        try check(sd_bus_message_close_container(m), "sd_bus_message_close_container")
    }

    static func append(_ m: OpaquePointer, _ value: DBusValue) throws(SDBusFailure) {
        switch value {
        case .byte(let b): try basic(m, "y", b)
        case .boolean(let b): try basic(m, "b", Int32(b ? 1 : 0))
        case .int32(let i): try basic(m, "i", i)
        case .uint32(let u): try basic(m, "u", u)
        case .int64(let x): try basic(m, "x", x)
        case .uint64(let t): try basic(m, "t", t)
        case .double(let d): try basic(m, "d", d)
        case .string(let s), .objectPath(let s), .signature(let s):
            let type: CChar = value.signature.utf8.first.map { CChar(bitPattern: $0) } ?? 0
            try check(s.withCString { sd_bus_message_append_basic(m, type, $0) }, "sd_bus_message_append_basic")
        case .bytes(let b):
            try check(b.withUnsafeBytes { sd_bus_message_append_array(m, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) }, "sd_bus_message_append_array")
        case .array(let element, let items):
            try container(m, "a", element) { () throws(SDBusFailure) in for i in items { try append(m, i) } }
        case .dictEntry(let k, let v):
            try container(m, "e", k.signature + v.signature) { () throws(SDBusFailure) in
                try append(m, k)
                try append(m, v)
            }
        case .structure(let fields):
            try container(m, "r", fields.map(\.signature).joined()) { () throws(SDBusFailure) in for f in fields { try append(m, f) } }
        case .variant(let inner):
            try container(m, "v", inner.signature) { () throws(SDBusFailure) in try append(m, inner) }
        }
    }
}
