/// How `coffer env` names variables (docs/references.md#naming).
///
/// Default: the item name's last `/` segment and the field name, each
/// with every run of characters other than ASCII letters and digits turned
/// into `_`, upper-cased, trimmed of `_`, joined by `_`; a leading digit
/// gets a `_` in front. `work/openai` + `key` → `OPENAI_KEY`,
/// `db/prod-pg` + `password` → `PROD_PG_PASSWORD`.
///
/// An item's stored `env` mapping (`coffer edit NAME --env-var FIELD=VAR`)
/// overrides the name of a field; `FIELD=-` leaves the field out.
public enum EnvNaming {
    /// The value of an `env` mapping entry that leaves a field out.
    public static let excluded = "-"

    static func sanitize(_ s: some StringProtocol) -> String {
        var out = ""
        var pendingUnderscore = false
        for u in s.unicodeScalars {
            if u.isASCII && (u.properties.isAlphabetic || ("0"..."9").contains(u)) {
                if pendingUnderscore && !out.isEmpty { out += "_" }
                pendingUnderscore = false
                out.unicodeScalars.append(u)
            } else {
                pendingUnderscore = true
            }
        }
        return out.uppercased()
    }

    /// The default variable for `field` of the item called `item`.
    public static func defaultName(item: String, field: String) -> String {
        let last = item.split(separator: "/").last.map(String.init) ?? item
        var name = [sanitize(last), sanitize(field)].filter { !$0.isEmpty }.joined(separator: "_")
        if name.isEmpty { name = "_" }
        if let f = name.unicodeScalars.first, ("0"..."9").contains(f) { name = "_" + name }
        return name
    }

    /// Whether `v` may be stored as an override: a variable name or `-`.
    public static func isValidOverride(_ v: String) -> Bool {
        v == excluded || Dotenv.isValidName(v)
    }

    public struct Variable: Sendable, Equatable {
        public var name: String
        public var value: String
        public var item: String
        public var field: String
        public var isSecret: Bool
    }

    /// The variables for `items`, in order (items as given, fields in the
    /// item's order). Two fields mapping to one name is an error.
    public static func variables(for items: [Item]) throws(CofferError) -> [Variable] {
        var out: [Variable] = []
        var seen: [String: (item: String, field: String)] = [:]
        for item in items {
            for f in item.fields {
                let name = item.env[f.name] ?? defaultName(item: item.name, field: f.name)
                if name == excluded { continue }
                if let other = seen[name] {
                    throw CofferError(
                        .badData,
                        "variable \(name) would hold both '\(other.item)' field '\(other.field)' and '\(item.name)' field '\(f.name)'",
                        hint: "name one of them with `coffer edit \(item.name) --env-var \(f.name)=OTHER_NAME` (or =- to leave it out), or select fewer items")
                }
                seen[name] = (item.name, f.name)
                out.append(Variable(name: name, value: f.value, item: item.name, field: f.name, isSecret: f.isSecret))
            }
        }
        return out
    }
}
