import CofferKit
import Foundation

/// Typed access to a parsed JSON object for the JSON readers: every wrong
/// type is an error naming the file, the entry and the key.
struct JSONObject {
    let dict: [String: Any]
    let file: String
    let place: String

    init(_ any: Any?, file: String, place: String) throws(CofferError) {
        guard let d = any as? [String: Any] else { throw ImportError.bad(file, place, "expected a JSON object") }
        dict = d
        self.file = file
        self.place = place
    }

    /// An empty object (for an optional part that is absent).
    init(emptyIn file: String, place: String) {
        dict = [:]
        self.file = file
        self.place = place
    }

    /// The first of `keys` holding non-empty text.
    func firstString(_ keys: String...) throws(CofferError) -> String? {
        for k in keys {
            if let s = try string(k), !s.isEmpty { return s }
        }
        return nil
    }

    func has(_ key: String) -> Bool { dict[key] != nil && !(dict[key] is NSNull) }

    /// A string, or nil when absent or null. Numbers and booleans are
    /// written as text (vendors are not consistent about it).
    func string(_ key: String) throws(CofferError) -> String? {
        guard let v = dict[key], !(v is NSNull) else { return nil }
        if let s = v as? String { return s }
        if let n = v as? NSNumber {
            if String(cString: n.objCType) == "c" { return n.boolValue ? "true" : "false" }
            return n.stringValue
        }
        throw ImportError.bad(file, place, "'\(key)' should be text")
    }

    func int(_ key: String) throws(CofferError) -> Int? {
        guard let v = dict[key], !(v is NSNull) else { return nil }
        if let n = v as? Int { return n }
        if let s = v as? String, let n = Int(s) { return n }
        throw ImportError.bad(file, place, "'\(key)' should be a number")
    }

    func bool(_ key: String) throws(CofferError) -> Bool? {
        guard let v = dict[key], !(v is NSNull) else { return nil }
        if let b = v as? Bool { return b }
        throw ImportError.bad(file, place, "'\(key)' should be true or false")
    }

    func object(_ key: String, place sub: String? = nil) throws(CofferError) -> JSONObject? {
        guard let v = dict[key], !(v is NSNull) else { return nil }
        return try JSONObject(v, file: file, place: sub ?? "\(place), '\(key)'")
    }

    func array(_ key: String) throws(CofferError) -> [Any] {
        guard let v = dict[key], !(v is NSNull) else { return [] }
        guard let a = v as? [Any] else { throw ImportError.bad(file, place, "'\(key)' should be a list") }
        return a
    }

    func objects(_ key: String) throws(CofferError) -> [JSONObject] {
        var out: [JSONObject] = []
        for (i, v) in try array(key).enumerated() {
            out.append(try JSONObject(v, file: file, place: "\(place), \(key)[\(i)]"))
        }
        return out
    }

    func strings(_ key: String) throws(CofferError) -> [String] {
        var out: [String] = []
        for v in try array(key) {
            guard let s = v as? String else { throw ImportError.bad(file, place, "'\(key)' should be a list of text") }
            out.append(s)
        }
        return out
    }

    /// Parses a whole JSON document.
    static func parse(_ data: Data, file: String) throws(CofferError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            let ns = error as NSError
            let detail = (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? "not valid JSON"
            throw ImportError.bad(file, nil, "malformed JSON (\(detail))")
        }
    }
}

/// Dates in vendors' JSON: ISO 8601 with or without fractional seconds, or
/// seconds since 1970.
enum VendorDate {
    static func parse(_ text: String?) -> Date? {
        guard let text, !text.isEmpty else { return nil }
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: text) { return d }
        if let s = Double(text) { return Date(timeIntervalSince1970: s) }
        return nil
    }
}
