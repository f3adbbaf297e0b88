import Foundation

/// A `coffer://` secret reference (docs/references.md).
///
///     reference = "coffer://" path [ "?field=" field ]
///     path      = segment *( "/" segment )
///
/// Segments and the field are percent-decoded after splitting, so `%2F`
/// puts a `/` into a field name and `%25`, `%3F`, `%23` stand for `%`, `?`
/// and `#`. Without `?field=`, the path is read two ways when it has more
/// than one segment: the whole path as an item name (its primary field),
/// or the last segment as a field of the item named by the rest. Which one
/// holds is decided by ``ReferenceResolver`` against the vault; if both
/// hold the reference is ambiguous and fails.
public struct Reference: Sendable, Hashable, CustomStringConvertible {
    public static let scheme = "coffer://"

    /// The decoded path segments (at least one, none empty).
    public var segments: [String]
    /// The field named with `?field=`, decoded; nil when not given.
    public var explicitField: String?
    /// The reference as written.
    public var text: String

    public var description: String { text }

    /// Whether `text` is meant as a reference: it starts with `coffer://`.
    public static func isReference(_ text: some StringProtocol) -> Bool {
        text.hasPrefix(scheme)
    }

    /// Parses `text`. Errors are ``CofferError/Kind/badData`` (exit 65) and
    /// quote the reference, which holds no secret.
    public init(parsing text: String) throws(CofferError) {
        self.text = text
        guard text.hasPrefix(Reference.scheme) else {
            throw Reference.malformed(text, "a reference starts with coffer://")
        }
        var rest = Substring(text.dropFirst(Reference.scheme.count))
        if let bad = rest.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw Reference.malformed(text, "control character U+\(String(bad.value, radix: 16, uppercase: true)) is not allowed")
        }
        if rest.contains("#") {
            throw Reference.malformed(text, "'#' must be written %23")
        }
        var field: String?
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            rest = rest[..<q]
            guard query.hasPrefix("field=") else {
                throw Reference.malformed(text, "the only query is ?field=NAME ('?' in a name must be written %3F)")
            }
            let raw = query.dropFirst("field=".count)
            guard !raw.contains("?"), !raw.contains("&") else {
                throw Reference.malformed(text, "the only query is ?field=NAME ('?' and '&' in a field name must be written %3F, %26)")
            }
            let decoded = try Reference.decode(raw, in: text)
            guard !decoded.isEmpty else { throw Reference.malformed(text, "?field= needs a field name") }
            field = decoded
        }
        guard !rest.isEmpty else { throw Reference.malformed(text, "no item name after coffer://") }
        var segs: [String] = []
        for part in rest.split(separator: "/", omittingEmptySubsequences: false) {
            guard !part.isEmpty else {
                throw Reference.malformed(text, "empty path segment (a leading, trailing or doubled '/')")
            }
            let d = try Reference.decode(part, in: text)
            guard !d.isEmpty else { throw Reference.malformed(text, "empty path segment") }
            segs.append(d)
        }
        segments = segs
        explicitField = field
    }

    /// Parses `text` after replacing every `${NAME}` in it with the value of
    /// the environment variable NAME (as op references allow:
    /// `coffer://db/${APP_ENV}/password`). ``text`` keeps what was written.
    /// An unset variable is a usage error (exit 64); a `$` not followed by
    /// `{` is an ordinary character.
    public init(parsing text: String, environment: [String: String]) throws(CofferError) {
        try self.init(parsing: try Reference.expandingVariables(in: text, environment: environment))
        self.text = text
    }

    /// `text` with each `${NAME}` replaced by `environment[NAME]`.
    public static func expandingVariables(in text: String, environment: [String: String]) throws(CofferError) -> String {
        guard text.contains("${") else { return text }
        var out = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            out += rest[..<open.lowerBound]
            let after = rest[open.upperBound...]
            guard let close = after.firstIndex(of: "}") else {
                throw Reference.malformed(text, "'${' without a closing '}'")
            }
            let name = String(after[..<close])
            guard Dotenv.isValidName(name) else {
                throw Reference.malformed(text, "'${\(name)}' is not a variable name (letters, digits, '_')")
            }
            guard let value = environment[name] else {
                throw CofferError(.usage, "reference '\(text)': the variable \(name) is not set", hint: "set \(name), or write the name out in the reference")
            }
            out += value
            rest = after[after.index(after: close)...]
        }
        return out + rest
    }

    /// Builds a reference to `field` of `item`, encoded so it parses back
    /// to exactly that (always with `?field=` when a field is given, so it
    /// never depends on which items exist).
    public init(item: String, field: String?) {
        let segs = item.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var t = Reference.scheme + segs.map { Reference.encode($0) }.joined(separator: "/")
        if let field { t += "?field=" + Reference.encode(field, extra: ["&"]) }
        text = t
        segments = segs
        explicitField = field
    }

    /// The item name when the whole path names the item.
    public var wholeName: String { segments.joined(separator: "/") }

    /// The (item, field) reading with the last segment as the field; nil
    /// for a one-segment path or when `?field=` was given.
    public var splitReading: (item: String, field: String)? {
        guard explicitField == nil, segments.count > 1 else { return nil }
        return (segments.dropLast().joined(separator: "/"), segments[segments.count - 1])
    }

    // MARK: Percent-encoding

    static func malformed(_ text: String, _ why: String) -> CofferError {
        CofferError(.badData, "malformed reference '\(text)': \(why)", hint: "see docs/references.md; write coffer://NAME or coffer://NAME/FIELD")
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Decodes `%XX` escapes; the result must be UTF-8 without control
    /// characters.
    static func decode(_ part: Substring, in text: String) throws(CofferError) -> String {
        guard part.contains("%") else { return String(part) }
        let bytes = Array(part.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let h = hexValue(bytes[i + 1]), let l = hexValue(bytes[i + 2]) else {
                    throw malformed(text, "'%' must be followed by two hex digits (write a literal '%' as %25)")
                }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else {
            throw malformed(text, "percent-escapes do not decode to UTF-8")
        }
        if s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw malformed(text, "control characters are not allowed, even percent-encoded")
        }
        return s
    }

    /// Encodes the characters the grammar reserves: `%`, `/`, `?`, `#`,
    /// `{`, `}`, control characters, plus `extra`. Spaces and other
    /// Unicode stay as they are.
    static func encode(_ s: String, extra: Set<Character> = []) -> String {
        var out = ""
        for ch in s {
            if ch == "%" || ch == "/" || ch == "?" || ch == "#" || ch == "{" || ch == "}" || extra.contains(ch)
                || ch.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            {
                for b in String(ch).utf8 { out += String(format: "%%%02X", b) }
            } else {
                out.append(ch)
            }
        }
        return out
    }
}

/// What a reference resolved to.
public struct ResolvedReference: Sendable, Equatable {
    public var reference: String
    public var itemID: String
    public var item: String
    public var field: String
    public var value: String
    public var isSecret: Bool
}

/// Resolves references against items fetched by name, fetching each item
/// at most once. The lookup returns nil for "no such item" and throws for
/// anything else (ambiguous name, damaged vault).
public struct ReferenceResolver {
    public typealias Lookup = (String) throws(CofferError) -> Item?

    private let lookup: Lookup
    private var cache: [String: Item?] = [:]

    public init(lookup: @escaping Lookup) {
        self.lookup = lookup
    }

    /// A resolver reading from an unlocked vault.
    public init(vault: Vault) {
        self.init { (name: String) throws(CofferError) -> Item? in
            // An invalid name cannot exist: treat it as absent.
            guard (try? Vault.normalizeName(name)) != nil || name.hasPrefix("id:") else { return nil }
            do throws(CofferError) {
                return try vault.item(named: name)
            } catch {
                // A short `id:` prefix is no item either.
                if error.kind == .itemNotFound || error.kind == .usage { return nil }
                throw error
            }
        }
    }

    private mutating func item(_ name: String) throws(CofferError) -> Item? {
        if let hit = cache[name] { return hit }
        let found = try lookup(name)
        cache[name] = .some(found)
        return found
    }

    /// Resolves `ref` by the rule in docs/references.md.
    public mutating func resolve(_ ref: Reference) throws(CofferError) -> ResolvedReference {
        let r = try resolveUnrecorded(ref)
        if !usedItems.contains(where: { $0.id.hex == r.itemID }), let item = cache.values.compactMap({ $0 }).first(where: { $0.id.hex == r.itemID }) {
            usedItems.append(item)
        }
        return r
    }

    /// The items resolved references pointed into, in first-use order (for
    /// expiry and conflict warnings).
    public private(set) var usedItems: [Item] = []

    private mutating func resolveUnrecorded(_ ref: Reference) throws(CofferError) -> ResolvedReference {
        func done(_ item: Item, _ field: Field) -> ResolvedReference {
            ResolvedReference(reference: ref.text, itemID: item.id.hex, item: item.name, field: field.name, value: field.value, isSecret: field.isSecret)
        }
        func noField(_ item: Item, _ name: String) -> CofferError {
            CofferError(
                .itemNotFound, "reference '\(ref.text)': item '\(item.name)' has no field '\(name)'",
                hint: item.fields.isEmpty ? "it has no fields" : "its fields are: \(item.fields.map(\.name).joined(separator: ", "))")
        }
        func primary(_ item: Item) throws(CofferError) -> Field {
            guard let f = item.primaryField else {
                throw CofferError(
                    .itemNotFound, "reference '\(ref.text)': item '\(item.name)' has no fields", remedy: .init(.addField, "add a field to it", item: item.name))
            }
            return f
        }

        let whole = try item(ref.wholeName)
        if let field = ref.explicitField {
            guard let whole else {
                throw CofferError(
                    .itemNotFound, "reference '\(ref.text)': no item named '\(ref.wholeName)'", remedy: .init(.listItems, "list the vault's items"))
            }
            guard let f = whole.field(field) else { throw noField(whole, field) }
            return done(whole, f)
        }
        guard let split = ref.splitReading else {
            guard let whole else {
                throw CofferError(
                    .itemNotFound, "reference '\(ref.text)': no item named '\(ref.wholeName)'", remedy: .init(.listItems, "list the vault's items"))
            }
            return done(whole, try primary(whole))
        }
        let parent = try item(split.item)
        let parentField = parent?.field(split.field)
        switch (whole, parent, parentField) {
        case (let w?, let p?, _?):
            throw CofferError(
                .ambiguousName,
                "reference '\(ref.text)' is ambiguous: there is an item '\(w.name)' and item '\(p.name)' has a field '\(split.field)'",
                hint:
                    "write \(Reference(item: p.name, field: split.field).text) for the field, or \(Reference(item: w.name, field: try primary(w).name).text) for the item"
            )
        case (let w?, _, _):
            return done(w, try primary(w))
        case (nil, let p?, let f?):
            return done(p, f)
        case (nil, let p?, nil):
            throw noField(p, split.field)
        case (nil, nil, _):
            throw CofferError(
                .itemNotFound, "reference '\(ref.text)': no item named '\(ref.wholeName)' or '\(split.item)'",
                remedy: .init(.listItems, "list the vault's items"))
        }
    }

    /// Resolves many references, each distinct one once.
    public mutating func resolveAll(_ refs: [Reference]) throws(CofferError) -> [Reference: ResolvedReference] {
        var out: [Reference: ResolvedReference] = [:]
        for r in refs where out[r] == nil { out[r] = try resolve(r) }
        return out
    }
}

extension Vault {
    /// Resolves one `coffer://` reference (docs/references.md). For many,
    /// use one ``ReferenceResolver`` so each item is read once.
    public func resolve(reference text: String) throws(CofferError) -> ResolvedReference {
        var resolver = ReferenceResolver(vault: self)
        return try resolver.resolve(try Reference(parsing: text))
    }
}
