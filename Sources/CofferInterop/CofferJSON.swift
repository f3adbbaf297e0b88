import CofferKit
import Foundation

/// Coffer's own plaintext JSON (docs/import-export.md#coffer-json,
/// Schemas/coffer-export.schema.json): every item with its type, fields
/// (value and secrecy), tags, source, expiry, sync policy, variable names
/// and, with `--history`, the earlier states of its fields. Lossless:
/// importing it back with `--from coffer-json` gives the same items.
///
/// Version 2 carries attachments (`coffer attach`): a field
/// `{name, secret, file: true, base64}` instead of `{name, value, secret}`.
/// Version 1 files (no attachments) are still read; a coffer that reads
/// only version 1 refuses version 2 instead of importing base64 as text.
public enum CofferJSON {
    public static let formatName = "coffer-json"
    /// The version written; every version up to it is read.
    public static let version = 2

    struct File: Encodable {
        var format: String
        var version: Int
        var exportedAt: String
        var items: [Item]
    }

    struct Item: Encodable {
        var name: String
        var type: String
        var fields: [FieldValue]
        var tags: [String]
        var source: String?
        var expires: String?
        var policy: String
        var env: [String: String]
        var history: [Version]?

        enum CodingKeys: String, CodingKey { case name, type, fields, tags, source, expires, policy, env, history }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(type, forKey: .type)
            try c.encode(fields, forKey: .fields)
            try c.encode(tags, forKey: .tags)
            try c.encode(source, forKey: .source)
            try c.encode(expires, forKey: .expires)
            try c.encode(policy, forKey: .policy)
            try c.encode(env, forKey: .env)
            try c.encodeIfPresent(history, forKey: .history)
        }
    }

    /// A text field `{name, value, secret}` or an attachment
    /// `{name, secret, file: true, base64}`.
    struct FieldValue: Encodable {
        var field: Field

        enum Keys: String, CodingKey { case name, value, secret, file, base64 }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(field.name, forKey: .name)
            try c.encode(field.isSecret, forKey: .secret)
            if field.isFile {
                try c.encode(true, forKey: .file)
                try c.encode(Data(field.bytes).base64EncodedString(), forKey: .base64)
            } else {
                try c.encode(field.value, forKey: .value)
            }
        }
    }

    struct Version: Encodable {
        var writtenAt: String?
        var fields: [FieldValue]
    }

    static func iso(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: d)
    }

    public static func write(_ entries: [InterchangeEntry], history: Bool, now: Date = Date()) throws(CofferError) -> Data {
        let file = File(
            format: formatName, version: version, exportedAt: iso(now),
            items: entries.map { e in
                Item(
                    name: e.name, type: e.type.rawValue,
                    fields: e.fields.map(FieldValue.init),
                    tags: e.tags, source: e.source, expires: e.expires?.description, policy: e.policy.rawValue, env: e.env,
                    history: history
                        ? e.history.map { v in
                            Version(writtenAt: v.writtenAt.map(iso), fields: v.fields.map(FieldValue.init))
                        } : nil)
            })
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        do {
            var data = try enc.encode(file)
            data.append(0x0A)
            return data
        } catch {
            throw CofferError(.internalError, "cannot encode the export: \(error)")
        }
    }

    public static func read(_ data: Data, file: String) throws(CofferError) -> ImportedFile {
        let root = try JSONObject(JSONObject.parse(data, file: file), file: file, place: "top level")
        guard try root.string("format") == formatName else {
            throw ImportError.bad(
                file, nil, "not a Coffer JSON export (\"format\" is not \"coffer-json\")",
                hint: "write one with `coffer export --format json --plaintext --out FILE`")
        }
        guard let v = try root.int("version"), (1...version).contains(v) else {
            let given = try root.int("version").map(String.init) ?? "missing"
            throw ImportError.bad(
                file, nil, "Coffer JSON version \(given) is not supported (this coffer reads versions 1 to \(version))",
                hint: "a newer coffer wrote it: upgrade coffer")
        }
        var out = ImportedFile()
        for (i, item) in try root.objects("items").enumerated() {
            let place = "items[\(i)]"
            guard let name = try item.string("name") else { throw ImportError.bad(file, place, "the item has no \"name\"") }
            let itemPlace = "\(place) ('\(name)')"
            guard let type = ItemType(rawValue: try item.string("type") ?? "") else {
                throw ImportError.bad(file, itemPlace, "unknown type '\(try item.string("type") ?? "")'")
            }
            func fields(_ list: [JSONObject]) throws(CofferError) -> [Field] {
                var out: [Field] = []
                for f in list {
                    guard let n = try f.string("name") else { throw ImportError.bad(file, itemPlace, "a field needs \"name\"") }
                    let secret = try f.bool("secret") ?? type.defaultSecrecy(of: n)
                    if try f.bool("file") == true {
                        guard v >= 2 else { throw ImportError.bad(file, itemPlace, "field '\(n)': attachments need Coffer JSON version 2") }
                        out.append(Field(name: n, bytes: try attachment(f, field: n), isSecret: secret, isFile: true))
                        continue
                    }
                    guard !f.has("base64") else { throw ImportError.bad(file, itemPlace, "field '\(n)' has \"base64\" but not \"file\": true") }
                    guard let value = try f.string("value") else { throw ImportError.bad(file, itemPlace, "field '\(n)' needs a \"value\"") }
                    out.append(Field(name: n, value: value, isSecret: secret))
                }
                return out
            }
            /// An attachment's bytes: strict base64 (RFC 4648, padded), at
            /// most ``Field/maxValueBytes`` decoded.
            func attachment(_ f: JSONObject, field n: String) throws(CofferError) -> [UInt8] {
                guard !f.has("value") else { throw ImportError.bad(file, itemPlace, "attachment '\(n)' has a \"value\"; its bytes belong in \"base64\"") }
                guard let text = try f.string("base64") else { throw ImportError.bad(file, itemPlace, "attachment '\(n)' has no \"base64\"") }
                guard text.utf8.count <= (Field.maxValueBytes + 2) / 3 * 4 else {
                    throw ImportError.bad(file, itemPlace, "attachment '\(n)' is larger than 16 MiB, the most a field may hold")
                }
                guard let data = Data(base64Encoded: text) else { throw ImportError.bad(file, itemPlace, "attachment '\(n)': \"base64\" is not valid base64") }
                return [UInt8](data)
            }
            var e = InterchangeEntry(name: name, type: type, origin: "\(file): \(itemPlace)")
            e.fields = try fields(try item.objects("fields"))
            e.tags = try item.strings("tags")
            e.source = try item.string("source")
            if let x = try item.string("expires") {
                guard let d = Day(x) else { throw ImportError.bad(file, itemPlace, "expires '\(x)' is not a date YYYY-MM-DD") }
                e.expires = d
            }
            if let p = try item.string("policy") {
                guard let policy = Swift.type(of: e.policy).init(rawValue: p) else {
                    throw ImportError.bad(file, itemPlace, "unknown policy '\(p)' (sync or local-only)")
                }
                e.policy = policy
            }
            if let env = try item.object("env") {
                for (k, _) in env.dict {
                    guard let variable = try env.string(k) else { continue }
                    e.env[k] = variable
                }
            }
            for version in try item.objects("history") {
                e.history.append(
                    InterchangeVersion(fields: try fields(try version.objects("fields")), writtenAt: VendorDate.parse(try version.string("writtenAt"))))
            }
            out.entries.append(e)
        }
        return out
    }
}
