import CofferKit
import Foundation

/// Bitwarden's unencrypted JSON export (docs/import-export.md#bitwarden-json).
/// Format documented at bitwarden.com/help/condition-bitwarden-import/
/// ("Condition a Bitwarden .json"): `folders`, `items` of type 1 login,
/// 2 secure note, 3 card, 4 identity, 5 SSH key; custom `fields` of type
/// 0 text, 1 hidden, 2 boolean, 3 linked. Attachments are never in the
/// export (bitwarden.com/help/export-your-data/); an item's `attachments`
/// list, when present, is named in a warning.
public enum BitwardenJSON {
    public static func read(_ data: Data, file: String) throws(CofferError) -> ImportedFile {
        let root = try JSONObject(JSONObject.parse(data, file: file), file: file, place: "top level")
        if try root.bool("encrypted") == true {
            throw CofferError(
                .badData, "\(file): this is a password-protected (encrypted) Bitwarden export, which coffer cannot read",
                hint: "export again choosing the format \".json\" (not \".json (Encrypted)\"), import it, then delete that file")
        }
        guard root.has("items") else {
            throw ImportError.bad(file, nil, "not a Bitwarden export (no \"items\" list)", hint: "export from Bitwarden with File format \".json\"")
        }
        var folders: [String: String] = [:]
        for f in try root.objects("folders") {
            if let id = try f.string("id") { folders[id] = try f.string("name") ?? "" }
        }
        var collections: [String: String] = [:]
        for c in try root.objects("collections") {
            if let id = try c.string("id") { collections[id] = try c.string("name") ?? "" }
        }
        var out = ImportedFile()
        for (i, raw) in try root.array("items").enumerated() {
            let place = "items[\(i)]"
            let item = try JSONObject(raw, file: file, place: place)
            let title = try item.string("name") ?? ""
            var prefix: String?
            if let fid = try item.string("folderId") { prefix = folders[fid] }
            if prefix == nil, let cid = try item.strings("collectionIds").first { prefix = collections[cid] }
            let name = [prefix, title.isEmpty ? "untitled" : title.replacingOccurrences(of: "/", with: "∕")].compactMap { $0 }.filter { !$0.isEmpty }.joined(
                separator: "/")
            let itemPlace = "\(place) ('\(name)')"
            var e = InterchangeEntry(name: name, type: .login, origin: "\(file): \(itemPlace)")
            guard let type = try item.int("type") else { throw ImportError.bad(file, itemPlace, "the item has no \"type\"") }
            switch type {
            case 1:
                e.type = .login
                let login = try item.object("login") ?? JSONObject(emptyIn: file, place: itemPlace)
                e.append("username", try login.string("username") ?? "", secret: false)
                e.append("password", try login.string("password") ?? "", secret: true)
                for u in try login.objects("uris") { e.append("url", try u.string("uri") ?? "", secret: false) }
                e.append("totp", try login.string("totp") ?? "", secret: true)
                if !(try login.array("fido2Credentials")).isEmpty {
                    out.warnings.append(InterchangeWarning(entry: name, "its passkey (FIDO2 credential) was not imported"))
                }
            case 2:
                e.type = .note
            case 3:
                e.type = .custom
                if let card = try item.object("card") {
                    for (k, f, s) in [
                        ("cardholderName", "cardholder", false), ("brand", "brand", false), ("number", "number", true),
                        ("expMonth", "exp-month", false), ("expYear", "exp-year", false), ("code", "code", true),
                    ] {
                        e.append(f, try card.string(k) ?? "", secret: s)
                    }
                }
            case 4:
                e.type = .custom
                if let id = try item.object("identity") {
                    let keys: [(String, String, Bool)] = [
                        ("title", "title", false), ("firstName", "first-name", false), ("middleName", "middle-name", false),
                        ("lastName", "last-name", false), ("username", "username", false), ("company", "company", false),
                        ("email", "email", false), ("phone", "phone", false), ("address1", "address1", false),
                        ("address2", "address2", false), ("address3", "address3", false), ("city", "city", false),
                        ("state", "state", false), ("postalCode", "postal-code", false), ("country", "country", false),
                        ("ssn", "ssn", true), ("passportNumber", "passport-number", true), ("licenseNumber", "license-number", true),
                    ]
                    for (k, f, s) in keys { e.append(f, try id.string(k) ?? "", secret: s) }
                }
            case 5:
                e.type = .custom
                if let key = try item.object("sshKey") {
                    e.append("private-key", try key.string("privateKey") ?? "", secret: true)
                    e.append("public-key", try key.string("publicKey") ?? "", secret: false)
                    e.append("fingerprint", try key.string("keyFingerprint") ?? "", secret: false)
                }
            default:
                throw ImportError.bad(file, itemPlace, "unknown item type \(type) (known: 1 login, 2 secure note, 3 card, 4 identity, 5 SSH key)")
            }
            let notes = try item.string("notes") ?? ""
            e.append("notes", notes, secret: e.type == .note)
            if e.type == .note && notes.isEmpty { e.append("notes", "", secret: true, keepEmpty: true) }
            for (j, f) in try item.objects("fields").enumerated() {
                let fname = try f.string("name") ?? "field\(j + 1)"
                switch try f.int("type") ?? 0 {
                case 3:
                    out.warnings.append(InterchangeWarning(entry: name, "linked field '\(fname)' was not imported (it only points at another field)"))
                case let t:
                    e.append(fname, try f.string("value") ?? "", secret: t == 1, keepEmpty: true)
                }
            }
            if try item.bool("favorite") == true { e.tags.append("favorite") }
            if try item.string("deletedDate") != nil {
                out.warnings.append(InterchangeWarning(entry: name, "it was in Bitwarden's trash and was not imported"))
                continue
            }
            // Bitwarden leaves attachments' bytes out of every export; an
            // item that lists some must have them moved by hand.
            let attached = try item.array("attachments")
            if !attached.isEmpty {
                let names = attached.compactMap { ($0 as? [String: Any])?["fileName"] as? String }.filter { !$0.isEmpty }.map { "'\($0)'" }
                let what =
                    attached.count == 1
                    ? "its attachment\(names.first.map { " \($0)" } ?? "") is"
                    : "its \(attached.count) attachments\(names.isEmpty ? "" : " (\(names.joined(separator: ", ")))") are"
                out.warnings.append(
                    InterchangeWarning(
                        entry: name,
                        "\(what) not in Bitwarden's export: download \(attached.count == 1 ? "it" : "them") from Bitwarden and add \(attached.count == 1 ? "it" : "each") with `coffer attach`"
                    ))
            }
            // Password history: the item as it was with each old password.
            var olds: [(Date?, String)] = []
            for h in try item.objects("passwordHistory") {
                if let p = try h.string("password") { olds.append((VendorDate.parse(try h.string("lastUsedDate")), p)) }
            }
            olds.sort { ($0.0 ?? .distantPast) < ($1.0 ?? .distantPast) }
            e.history = olds.map { (date, password) in
                var fields = e.fields.filter { $0.name != "password" }
                fields.insert(Field(name: "password", value: password, isSecret: true), at: min(1, fields.count))
                return InterchangeVersion(fields: fields, writtenAt: date)
            }
            out.entries.append(e)
        }
        return out
    }
}
