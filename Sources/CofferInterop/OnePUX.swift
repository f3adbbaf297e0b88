import CofferKit
import Foundation
import ZIPFoundation

/// 1Password's 1PUX export (docs/import-export.md#1password-1pux): a zip
/// holding `export.data`, JSON of accounts → vaults → items, documented at
/// support.1password.com/1pux-format/. Files under `files/` (documents and
/// file attachments) are named in warnings, not imported.
public enum OnePUX {
    /// Item category ids (1PUX `categoryUuid`).
    static let categories: [String: String] = [
        "001": "login", "002": "credit card", "003": "secure note", "004": "identity", "005": "password",
        "006": "document", "100": "software license", "101": "bank account", "102": "database",
        "103": "driver license", "104": "outdoor license", "105": "membership", "106": "passport",
        "107": "rewards", "108": "social security number", "109": "wireless router", "110": "server",
        "111": "email account", "112": "API credential", "113": "medical record", "114": "SSH key",
    ]

    public static func read(path: String) throws(CofferError) -> ImportedFile {
        let bytes = try ImportError.read(path)
        let archive: Archive
        do {
            archive = try Archive(data: bytes, accessMode: .read)
        } catch {
            throw ImportError.bad(path, nil, "not a zip archive, so not a 1PUX export", hint: "export from 1Password with File > Export > 1PUX")
        }
        guard let entry = archive["export.data"] else {
            throw ImportError.bad(path, nil, "the zip holds no export.data, so it is not a 1PUX export", hint: "export from 1Password with File > Export > 1PUX")
        }
        guard entry.uncompressedSize < 1 << 30 else {
            throw ImportError.bad(path, "export.data", "larger than 1 GiB")
        }
        var data = Data()
        do {
            _ = try archive.extract(entry, skipCRC32: false) { chunk in data.append(chunk) }
        } catch {
            throw ImportError.bad(path, "export.data", "cannot be extracted (\(error))")
        }
        return try read(data, file: "\(path) (export.data)")
    }

    /// Reads the JSON of `export.data`.
    public static func read(_ data: Data, file: String) throws(CofferError) -> ImportedFile {
        let root = try JSONObject(JSONObject.parse(data, file: file), file: file, place: "top level")
        guard root.has("accounts") else { throw ImportError.bad(file, nil, "no \"accounts\" list: not a 1PUX export.data") }
        let accounts = try root.objects("accounts")
        var out = ImportedFile()
        for (a, account) in accounts.enumerated() {
            let attrs = try account.object("attrs")
            let accountName = try attrs?.firstString("accountName", "name") ?? "account\(a + 1)"
            for (v, vault) in try account.objects("vaults").enumerated() {
                let vaultName = try vault.object("attrs")?.string("name") ?? "vault\(v + 1)"
                for (i, item) in try vault.objects("items").enumerated() {
                    let place = "accounts[\(a)].vaults[\(v)].items[\(i)]"
                    var prefix = [vaultName]
                    if accounts.count > 1 { prefix.insert(accountName, at: 0) }
                    if let e = try readItem(item, prefix: prefix, file: file, place: place, warnings: &out.warnings) {
                        out.entries.append(e)
                    }
                }
            }
        }
        return out
    }

    static func readItem(_ item: JSONObject, prefix: [String], file: String, place: String, warnings: inout [InterchangeWarning]) throws(CofferError) -> InterchangeEntry? {
        let overview = try item.object("overview") ?? JSONObject(emptyIn: file, place: place)
        let details = try item.object("details") ?? JSONObject(emptyIn: file, place: place)
        let title = try overview.string("title") ?? ""
        let name = (prefix + [title.isEmpty ? "untitled" : title.replacingOccurrences(of: "/", with: "∕")]).map { $0.replacingOccurrences(of: "/", with: "∕") }.joined(separator: "/")
        let category = try item.string("categoryUuid") ?? "001"
        var e = InterchangeEntry(name: name, type: .custom, origin: "\(file): \(place) ('\(name)')")
        switch category {
        case "001", "005": e.type = .login
        case "003": e.type = .note
        default: e.type = .custom
        }
        if try item.string("state") == "archived" { e.tags.append("archived") }
        e.tags += try overview.strings("tags").map { $0.replacingOccurrences(of: ",", with: " ") }
        // Login fields (username/password by designation, others by name).
        for f in try details.objects("loginFields") {
            let value = try f.string("value") ?? ""
            switch try f.string("designation") ?? "" {
            case "username": e.append("username", value, secret: false)
            case "password": e.append("password", value, secret: true)
            default:
                if value.isEmpty { continue }
                e.append(try f.firstString("name", "id") ?? "field", value, secret: try f.string("fieldType") == "P")
            }
        }
        if let p = try details.string("password") { e.append("password", p, secret: true) }
        // URLs: the main one first, then the others.
        var urls: [String] = []
        if let u = try overview.string("url"), !u.isEmpty { urls.append(u) }
        for u in try overview.objects("urls") {
            if let s = try u.string("url"), !s.isEmpty, !urls.contains(s) { urls.append(s) }
        }
        for u in urls { e.append("url", u, secret: false) }
        for section in try details.objects("sections") {
            for f in try section.objects("fields") {
                let label = try f.firstString("title", "id") ?? "field"
                guard let value = try f.object("value") else { continue }
                guard let (kind, raw) = value.dict.first else { continue }
                switch kind {
                case "concealed", "creditCardNumber":
                    e.append(label, try value.string(kind) ?? "", secret: true)
                case "totp":
                    e.append("totp", try value.string(kind) ?? "", secret: true)
                case "string", "url", "phone", "creditCardType", "menu", "gender", "reference", "monthYear":
                    e.append(label, try value.string(kind) ?? "", secret: false)
                case "email":
                    if let s = raw as? String { e.append(label, s, secret: false) } else {
                        e.append(label, try value.object(kind)?.string("email_address") ?? "", secret: false)
                    }
                case "date":
                    if let n = try value.int(kind) {
                        e.append(label, Day(Date(timeIntervalSince1970: TimeInterval(n))).description, secret: false)
                    }
                case "address":
                    if let a = try value.object(kind) {
                        var parts: [String] = []
                        for k in ["street", "city", "state", "zip", "country"] {
                            if let s = try a.string(k), !s.isEmpty { parts.append(s) }
                        }
                        e.append(label, parts.joined(separator: "\n"), secret: false)
                    }
                case "sshKey":
                    if let s = raw as? String { e.append(label, s, secret: true) } else {
                        e.append("private-key", try value.object(kind)?.string("privateKey") ?? "", secret: true)
                    }
                case "file":
                    let fileName = try value.object(kind)?.string("fileName") ?? label
                    warnings.append(InterchangeWarning(entry: name, "attached file '\(fileName)' was not imported (Coffer does not store binary attachments yet)"))
                default:
                    if let s = raw as? String { e.append(label, s, secret: false) } else {
                        warnings.append(InterchangeWarning(entry: name, "field '\(label)' of kind '\(kind)' was not imported"))
                    }
                }
            }
        }
        if let doc = try details.object("documentAttributes") {
            let fileName = try doc.string("fileName") ?? "document"
            warnings.append(InterchangeWarning(entry: name, "document '\(fileName)' was not imported (Coffer does not store binary attachments yet)"))
        }
        let notes = try details.string("notesPlain") ?? ""
        e.append("notes", notes, secret: e.type == .note)
        if e.type == .note && notes.isEmpty { e.append("notes", "", secret: true, keepEmpty: true) }
        if e.type == .custom, let cat = categories[category] { e.append("category", cat, secret: false) }
        var olds: [(Date?, String)] = []
        for h in try details.objects("passwordHistory") {
            if let p = try h.string("value") { olds.append((try h.int("time").map { Date(timeIntervalSince1970: TimeInterval($0)) }, p)) }
        }
        olds.sort { ($0.0 ?? .distantPast) < ($1.0 ?? .distantPast) }
        e.history = olds.map { (date, password) in
            var fields = e.fields.filter { $0.name != "password" }
            fields.append(Field(name: "password", value: password, isSecret: true))
            return InterchangeVersion(fields: fields, writtenAt: date)
        }
        return e
    }
}
