import Foundation

/// What kind of credential a source needs (the `type` of a source in a
/// requirements manifest). The names match ``ItemType``'s.
public enum CredentialType: String, Sendable, CaseIterable, Codable {
    /// One API key (a bearer token, a query parameter…): an item's `key` field.
    case apiKey = "api-key"
    /// An email address used as an identifier (e.g. Crossref's polite pool).
    case email
    /// Both an API key and an email address.
    case apiKeyWithEmail = "api-key-with-email"
    /// A username and password (and perhaps a URL).
    case login
    /// Any item whose source is the source id; only `fields` rules apply.
    case custom

    /// The item type `coffer add` and ``CredentialManager`` create for it.
    public var itemType: ItemType {
        switch self {
        case .apiKey: return .apiKey
        case .email: return .email
        case .apiKeyWithEmail: return .apiKeyWithEmail
        case .login: return .login
        case .custom: return .custom
        }
    }

    /// The fields a credential of this type must have to be ready, in order.
    public var requiredFields: [String] {
        switch self {
        case .apiKey: return ["key"]
        case .email: return ["email"]
        case .apiKeyWithEmail: return ["key", "email"]
        case .login: return ["password"]
        case .custom: return []
        }
    }

    /// The field a source's `format` rule applies to.
    public var formattedField: String? {
        switch self {
        case .apiKey, .apiKeyWithEmail: return "key"
        case .email: return "email"
        case .login: return "password"
        case .custom: return nil
        }
    }
}

/// A format rule for one credential value: every given part must hold.
/// Messages about a failing value never contain the value.
public struct FormatRule: Sendable, Equatable {
    /// The value must start with one of these (empty: no prefix needed).
    public var prefixes: [String]
    /// Fewest characters (Unicode scalars... counted as Swift `Character`s).
    public var minLength: Int?
    /// Most characters.
    public var maxLength: Int?
    /// A regular expression (ICU syntax, unanchored like JSON Schema's
    /// `pattern`: write `^…$` to match the whole value).
    public var pattern: String?
    /// The value must be an absolute URL with one of these schemes.
    public var urlSchemes: [String]?

    /// A rule; every part is optional.
    public init(prefixes: [String] = [], minLength: Int? = nil, maxLength: Int? = nil, pattern: String? = nil, urlSchemes: [String]? = nil) {
        self.prefixes = prefixes
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
        self.urlSchemes = urlSchemes
    }

    /// Why `value` fails the rule: one short phrase per failed part
    /// ("does not start with 'sk-'"), empty when it passes.
    public func problems(in value: String) -> [String] {
        var out: [String] = []
        let live = prefixes.filter { !$0.isEmpty }
        if !live.isEmpty && !live.contains(where: { value.hasPrefix($0) }) {
            out.append("does not start with " + live.map { "'\($0)'" }.joined(separator: " or "))
        }
        let n = value.count
        if let min = minLength, n < min {
            out.append("is \(n) characters long, shorter than the minimum \(min)")
        }
        if let max = maxLength, n > max {
            out.append("is \(n) characters long, longer than the maximum \(max)")
        }
        if let pattern {
            if let re = try? NSRegularExpression(pattern: pattern) {
                switch FormatRule.match(re, value) {
                case .matched: break
                case .noMatch: out.append("does not match the pattern \(pattern)")
                case .tooSlow:
                    out.append("cannot be checked: the pattern \(pattern) takes too long on this value (it backtracks; simplify it in the manifest)")
                }
            } else {
                out.append("cannot be checked: the pattern \(pattern) is not a valid regular expression")
            }
        }
        if let schemes = urlSchemes {
            let allowed = schemes.map { $0.lowercased() }
            if let url = URL(string: value), let scheme = url.scheme?.lowercased(), url.host != nil || scheme == "file" {
                if !allowed.isEmpty && !allowed.contains(scheme) {
                    out.append("is a \(scheme) URL; expected " + allowed.map { "\($0)://" }.joined(separator: " or "))
                }
            } else {
                out.append("is not an absolute URL" + (allowed.isEmpty ? "" : " (expected " + allowed.map { "\($0)://…" }.joined(separator: " or ") + ")"))
            }
        }
        return out
    }

    /// Whether `value` passes.
    public func accepts(_ value: String) -> Bool { problems(in: value).isEmpty }
}

/// The built-in check every email part gets: one `@`, a non-empty local
/// part, a domain with a dot, no spaces.
public enum EmailRule {
    /// Why `value` is not an email address; empty when it looks like one.
    public static func problems(in value: String) -> [String] {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix("."), !value.contains(where: { $0.isWhitespace })
        else { return ["is not an email address (expected name@example.org)"] }
        return []
    }
}

/// One source's declared credential need (the seeds'
/// `SourceCredentialRequirement`).
public struct SourceRequirement: Sendable, Equatable {
    /// The source id, matched against items' `source` (e.g. `ads`).
    public var id: String
    /// Display name (defaults to the id).
    public var name: String
    /// What credential the source needs.
    public var type: CredentialType
    /// Whether the source cannot work without it (`check` fails when a
    /// required source is not ready).
    public var isRequired: Bool
    /// Where to get a key.
    public var registrationURL: String?
    /// What the credential is for.
    public var description: String?
    /// Features that are unavailable without the credential.
    public var unavailableWithout: [String]
    /// Rule for the type's main value (`key`, `email` or `password`).
    public var format: FormatRule?
    /// Rules for other fields by name (e.g. `url`).
    public var fieldFormats: [String: FormatRule]

    /// A requirement; only id and type are needed.
    public init(
        id: String, name: String? = nil, type: CredentialType, isRequired: Bool = false, registrationURL: String? = nil,
        description: String? = nil, unavailableWithout: [String] = [], format: FormatRule? = nil,
        fieldFormats: [String: FormatRule] = [:]
    ) {
        self.id = id
        self.name = name ?? id
        self.type = type
        self.isRequired = isRequired
        self.registrationURL = registrationURL
        self.description = description
        self.unavailableWithout = unavailableWithout
        self.format = format
        self.fieldFormats = fieldFormats
    }

    /// The rule that applies to field `field` of this source's credential.
    public func rule(forField field: String) -> FormatRule? {
        if let f = fieldFormats[field] { return f }
        return field == type.formattedField ? format : nil
    }

    /// Why `value`, stored in field `field`, fails this source's rules
    /// (including the built-in email check for `email` fields).
    public func problems(field: String, value: String) -> [String] {
        var out: [String] = []
        if field == "email" && (type == .email || type == .apiKeyWithEmail) {
            out += EmailRule.problems(in: value)
        }
        if let rule = rule(forField: field) { out += rule.problems(in: value) }
        return out
    }
}

/// A requirements manifest: which sources an application uses and what
/// credential each one needs. See docs/requirements.md and
/// Schemas/requirements.schema.json.
public struct RequirementsManifest: Sendable, Equatable {
    /// Format version; only 1 exists.
    public var version: Int
    /// Optional manifest name (used by `coffer requirements add`).
    public var name: String?
    /// The sources, in file order.
    public var sources: [SourceRequirement]

    /// A manifest built in code.
    public init(version: Int = 1, name: String? = nil, sources: [SourceRequirement]) {
        self.version = version
        self.name = name
        self.sources = sources
    }

    /// The source with this id.
    public func source(_ id: String) -> SourceRequirement? { sources.first { $0.id == id } }

    /// Reads and parses the manifest at `path`. A missing file is
    /// ``CofferError/Kind/fileNotFound``; a malformed one is
    /// ``CofferError/Kind/badData`` with the file, the JSON path and what
    /// was expected in the message.
    public static func load(path: String) throws(CofferError) -> RequirementsManifest {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
                throw CofferError(
                    .fileNotFound, "no requirements manifest at \(path)", remedy: .init(.checkManifestPath, "check the manifest's path", path: path))
            }
            if isDirectory.boolValue {
                throw CofferError(.usage, "\(path) is a folder, not a requirements manifest", hint: "give the path of the manifest's JSON file")
            }
            throw CofferError(.fileNotFound, "cannot read the requirements manifest \(path)", hint: "check that the file is readable by you")
        }
        return try parse(data, file: path)
    }

    /// Parses manifest JSON; `file` names the input in error messages.
    public static func parse(_ data: Data, file: String) throws(CofferError) -> RequirementsManifest {
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            var detail = ""
            if case DecodingError.dataCorrupted(let ctx) = error {
                detail = ctx.underlyingError.map { ": \(String(describing: $0))" } ?? ": \(ctx.debugDescription)"
            }
            throw CofferError(.badData, "\(file): not valid JSON\(detail)", hint: "fix the file; its format is in docs/requirements.md")
        }
        do {
            return try ManifestParser(file: file).manifest(root)
        } catch let e as ManifestError {
            throw CofferError(
                .badData, "\(file): at \(e.path): \(e.message)",
                hint: "fix the manifest; its format is in docs/requirements.md and Schemas/requirements.schema.json")
        } catch {
            throw CofferError(.internalError, "\(error)")
        }
    }
}

// MARK: - Parsing with JSON paths

/// A decoded JSON document, keeping booleans and numbers apart.
enum JSONValue: Decodable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        if var a = try? decoder.unkeyedContainer() {
            var out: [JSONValue] = []
            while !a.isAtEnd { out.append(try a.decode(JSONValue.self)) }
            self = .array(out)
            return
        }
        if let o = try? decoder.container(keyedBy: AnyKey.self) {
            var out: [String: JSONValue] = [:]
            for k in o.allKeys { out[k.stringValue] = try o.decode(JSONValue.self, forKey: k) }
            self = .object(out)
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else {
            self = .string(try c.decode(String.self))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// "a string", "an array", … for error messages.
    var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

struct ManifestError: Error {
    var path: String
    var message: String
}

/// Walks a ``JSONValue`` and builds the manifest, naming the JSON path of
/// the first thing that is wrong.
struct ManifestParser {
    let file: String

    static let sourceKeys = ["id", "name", "type", "required", "registrationURL", "description", "unavailableWithout", "format", "fields"]
    static let formatKeys = ["prefix", "minLength", "maxLength", "pattern", "urlSchemes"]

    func fail(_ path: String, _ message: String) -> ManifestError { ManifestError(path: path, message: message) }

    func object(_ v: JSONValue, _ path: String, keys: [String], required: [String]) throws -> [String: JSONValue] {
        guard case .object(let o) = v else { throw fail(path, "expected an object, found \(v.kindName)") }
        for k in o.keys.sorted() where !keys.contains(k) {
            throw fail(path, "unknown key '\(k)' (expected one of: \(keys.joined(separator: ", ")))")
        }
        for k in required where o[k] == nil {
            throw fail(path, "missing required key '\(k)'")
        }
        return o
    }

    func string(_ v: JSONValue, _ path: String, nonEmpty: Bool = false) throws -> String {
        guard case .string(let s) = v else { throw fail(path, "expected a string, found \(v.kindName)") }
        if nonEmpty && s.isEmpty { throw fail(path, "expected a non-empty string") }
        return s
    }

    func strings(_ v: JSONValue, _ path: String) throws -> [String] {
        guard case .array(let a) = v else { throw fail(path, "expected an array of strings, found \(v.kindName)") }
        return try a.enumerated().map { i, e in try string(e, "\(path)[\(i)]") }
    }

    func count(_ v: JSONValue, _ path: String) throws -> Int {
        guard case .int(let i) = v, i >= 0 else {
            if case .int = v { throw fail(path, "expected a non-negative integer, found a negative number") }
            throw fail(path, "expected a non-negative integer, found \(v.kindName)")
        }
        return i
    }

    func manifest(_ root: JSONValue) throws -> RequirementsManifest {
        let o = try object(root, "$", keys: ["version", "name", "sources", "$schema"], required: ["version", "sources"])
        guard case .int(let version) = o["version"]! else {
            throw fail("$.version", "expected the integer 1, found \(o["version"]!.kindName)")
        }
        guard version == 1 else {
            throw fail("$.version", "expected 1, found \(version) (this coffer reads manifest version 1)")
        }
        let name = try o["name"].map { try string($0, "$.name", nonEmpty: true) }
        guard case .array(let list) = o["sources"]! else {
            throw fail("$.sources", "expected an array of sources, found \(o["sources"]!.kindName)")
        }
        var sources: [SourceRequirement] = []
        var seen: [String: Int] = [:]
        for (i, v) in list.enumerated() {
            let s = try source(v, "$.sources[\(i)]")
            if let first = seen[s.id] {
                throw fail("$.sources[\(i)].id", "duplicate source id '\(s.id)' (also at $.sources[\(first)])")
            }
            seen[s.id] = i
            sources.append(s)
        }
        return RequirementsManifest(version: version, name: name, sources: sources)
    }

    func source(_ v: JSONValue, _ path: String) throws -> SourceRequirement {
        let o = try object(v, path, keys: Self.sourceKeys, required: ["id", "type"])
        let id = try string(o["id"]!, "\(path).id", nonEmpty: true)
        guard id.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }) else {
            throw fail("\(path).id", "expected a source id of letters, digits, '.', '_' or '-', found '\(id)'")
        }
        let typeText = try string(o["type"]!, "\(path).type")
        guard let type = CredentialType(rawValue: typeText) else {
            throw fail("\(path).type", "expected one of \(CredentialType.allCases.map(\.rawValue).joined(separator: ", ")), found '\(typeText)'")
        }
        var required = false
        if let r = o["required"] {
            guard case .bool(let b) = r else { throw fail("\(path).required", "expected true or false, found \(r.kindName)") }
            required = b
        }
        var registration: String?
        if let r = o["registrationURL"] {
            let s = try string(r, "\(path).registrationURL")
            guard let u = URL(string: s), let scheme = u.scheme?.lowercased(), ["http", "https"].contains(scheme), u.host != nil else {
                throw fail("\(path).registrationURL", "expected an http or https URL, found '\(s)'")
            }
            registration = s
        }
        var fields: [String: FormatRule] = [:]
        if let f = o["fields"] {
            guard case .object(let fo) = f else { throw fail("\(path).fields", "expected an object of field name to format rule, found \(f.kindName)") }
            for k in fo.keys.sorted() {
                guard !k.isEmpty, !k.hasPrefix("@") else { throw fail("\(path).fields", "expected field names, found '\(k)'") }
                fields[k] = try rule(fo[k]!, "\(path).fields.\(k)")
            }
        }
        return SourceRequirement(
            id: id, name: try o["name"].map { try string($0, "\(path).name", nonEmpty: true) }, type: type,
            isRequired: required, registrationURL: registration,
            description: try o["description"].map { try string($0, "\(path).description") },
            unavailableWithout: try o["unavailableWithout"].map { try strings($0, "\(path).unavailableWithout") } ?? [],
            format: try o["format"].map { try rule($0, "\(path).format") }, fieldFormats: fields)
    }

    func rule(_ v: JSONValue, _ path: String) throws -> FormatRule {
        let o = try object(v, path, keys: Self.formatKeys, required: [])
        var r = FormatRule()
        if let p = o["prefix"] {
            switch p {
            case .string(let s): r.prefixes = s.isEmpty ? [] : [s]
            case .array: r.prefixes = try strings(p, "\(path).prefix").filter { !$0.isEmpty }
            default: throw fail("\(path).prefix", "expected a string or an array of strings, found \(p.kindName)")
            }
        }
        r.minLength = try o["minLength"].map { try count($0, "\(path).minLength") }
        r.maxLength = try o["maxLength"].map { try count($0, "\(path).maxLength") }
        if let min = r.minLength, let max = r.maxLength, max < min {
            throw fail("\(path).maxLength", "expected a maximum of at least minLength (\(min)), found \(max)")
        }
        if let p = o["pattern"] {
            let s = try string(p, "\(path).pattern", nonEmpty: true)
            do { _ = try NSRegularExpression(pattern: s) } catch {
                throw fail("\(path).pattern", "expected a valid regular expression, found '\(s)'")
            }
            r.pattern = s
        }
        if let u = o["urlSchemes"] {
            let list = try strings(u, "\(path).urlSchemes")
            for (i, s) in list.enumerated() where s.isEmpty || s.contains(":") || s.contains("/") {
                throw fail("\(path).urlSchemes[\(i)]", "expected a URL scheme such as https (no ':' or '/'), found '\(s)'")
            }
            r.urlSchemes = list
        }
        return r
    }
}

extension FormatRule {
    enum MatchOutcome { case matched, noMatch, tooSlow }

    /// The longest a manifest's pattern may run on one value. Manifests
    /// sync between machines, so a pattern that backtracks exponentially
    /// must not be able to hang `add`, `check` or an app on every replica.
    static let patternTimeLimit: TimeInterval = 0.25

    /// Searches `value` for `re` with a deadline (NSRegularExpression's
    /// progress callback lets the search be stopped).
    static func match(_ re: NSRegularExpression, _ value: String) -> MatchOutcome {
        let deadline = Date().addingTimeInterval(patternTimeLimit)
        var found = false
        var timedOut = false
        re.enumerateMatches(in: value, options: [.reportProgress], range: NSRange(value.startIndex..<value.endIndex, in: value)) { m, _, stop in
            if m != nil {
                found = true
                stop.pointee = true
            } else if Date() > deadline {
                timedOut = true
                stop.pointee = true
            }
        }
        return found ? .matched : (timedOut ? .tooSlow : .noMatch)
    }
}
