import CofferKit
import Foundation

/// RFC 4180 CSV: comma-separated, `"` quoting with `""` for a quote, LF or
/// CRLF line ends, fields may span lines inside quotes. Written here rather
/// than with SwiftCSV because a bad file must be refused with its line
/// number, and SwiftCSV reports neither the line nor a wrong column count
/// (docs/import-export.md#csv).
public enum CSV {
    public struct Row: Sendable, Equatable {
        public var values: [String]
        /// The line the row starts on (1-based).
        public var line: Int
    }

    public static func parse(_ text: String, file: String) throws(CofferError) -> [Row] {
        var rows: [Row] = []
        var row: [String] = []
        var field = ""
        var line = 1
        var rowLine = 1
        var quoted = false
        var quoteLine = 0
        var atFieldStart = true
        var afterQuote = false
        var it = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func next() -> Unicode.Scalar? {
            if let p = pending {
                pending = nil
                return p
            }
            return it.next()
        }
        func endRow() {
            row.append(field)
            field = ""
            if !(row.count == 1 && row[0].isEmpty) { rows.append(Row(values: row, line: rowLine)) }
            row = []
            atFieldStart = true
            afterQuote = false
        }
        while let c = next() {
            if quoted {
                if c == "\"" {
                    if let n = next() {
                        if n == "\"" {
                            field.unicodeScalars.append("\"")
                        } else {
                            quoted = false
                            afterQuote = true
                            pending = n
                        }
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.unicodeScalars.append(c)
                }
                continue
            }
            switch c {
            case ",":
                row.append(field)
                field = ""
                atFieldStart = true
                afterQuote = false
            case "\r":
                if let n = next(), n != "\n" { pending = n }
                endRow()
                line += 1
                rowLine = line
            case "\n":
                endRow()
                line += 1
                rowLine = line
            case "\"" where atFieldStart:
                quoted = true
                quoteLine = line
                atFieldStart = false
            default:
                if afterQuote {
                    throw ImportError.bad(file, "line \(line)", "text after a closing quote (a quote inside a quoted field is written \"\")")
                }
                atFieldStart = false
                field.unicodeScalars.append(c)
            }
        }
        if quoted { throw ImportError.bad(file, "line \(quoteLine)", "a quoted field is never closed") }
        if !field.isEmpty || !row.isEmpty { endRow() }
        return rows
    }

    /// The characters that make a spreadsheet read a cell as a formula
    /// (OWASP, "CSV Injection"): `=`, `+`, `-`, `@`, tab and carriage return.
    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]

    /// Whether a spreadsheet would run `s` as a formula.
    public static func isFormula(_ s: String) -> Bool {
        s.unicodeScalars.first.map { formulaStarts.contains($0) } ?? false
    }

    /// OWASP's rule: a cell that starts like a formula gets a leading `'`,
    /// which spreadsheets show as text. A cell that already starts with
    /// `'`s and then a formula character gets one more, so that
    /// ``unneutralised(_:)`` gives back every value exactly.
    public static func neutralised(_ s: String) -> String {
        let afterQuotes = s.unicodeScalars.drop { $0 == "'" }
        guard let first = afterQuotes.first, formulaStarts.contains(first) else { return s }
        return "'" + s
    }

    /// The value ``neutralised(_:)`` was given.
    public static func unneutralised(_ s: String) -> String {
        let afterQuotes = s.unicodeScalars.drop { $0 == "'" }
        guard s.hasPrefix("'"), let first = afterQuotes.first, formulaStarts.contains(first) else { return s }
        return String(s.dropFirst())
    }

    /// Quotes a value when it needs it.
    public static func quote(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) || s.hasPrefix(" ") || s.hasSuffix(" ") else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// CSV password exports (docs/import-export.md#csv): the layout is detected
/// from the header for Chrome/Chromium, Firefox, Bitwarden, KeePassXC,
/// LastPass and Coffer's own CSV; any other is read with
/// `--columns FIELD=COLUMN,…`.
public enum CSVImport {
    public enum Layout: String, Sendable {
        case chrome, firefox, bitwarden, keepassxc, lastpass, coffer, columns
    }

    /// Parses `--columns name=title,password=pass,…` into (Coffer field,
    /// CSV column) pairs. Special targets: `name` (the item name), `folder`
    /// (a name prefix), `tags` (comma- or semicolon-separated), `type`.
    public static func parseColumns(_ spec: String) throws(CofferError) -> [(field: String, column: String)] {
        var out: [(String, String)] = []
        for part in spec.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard kv.count == 2, !kv[0].isEmpty, !kv[1].isEmpty else {
                throw CofferError(.usage, "--columns: '\(part)' is not FIELD=COLUMN", hint: "e.g. --columns name=title,username=login,password=pass")
            }
            out.append((kv[0], kv[1]))
        }
        guard out.contains(where: { $0.0 == "name" }) else {
            throw CofferError(.usage, "--columns must map the item name (name=COLUMN)", hint: "e.g. --columns name=title,password=pass")
        }
        return out
    }

    static func detect(_ header: [String]) -> Layout? {
        let h = header.map { $0.lowercased().trimmingCharacters(in: .whitespaces) }
        let s = Set(h)
        if h.starts(with: ["name", "type", "tags", "expires"]) { return .coffer }
        if s.isSuperset(of: ["login_uri", "login_username", "login_password", "name", "type"]) { return .bitwarden }
        if s.isSuperset(of: ["group", "title", "username", "password", "url"]) { return .keepassxc }
        if s.isSuperset(of: ["url", "username", "password", "extra", "name", "grouping"]) { return .lastpass }
        if s.isSuperset(of: ["url", "username", "password", "httprealm", "formactionorigin", "guid"]) { return .firefox }
        if s.isSuperset(of: ["name", "url", "username", "password"]) { return .chrome }
        return nil
    }

    public static func read(_ data: Data, file: String, columns: [(field: String, column: String)]? = nil) throws(CofferError) -> (ImportedFile, Layout) {
        let rows = try CSV.parse(try ImportError.text(data, file: file), file: file)
        guard var header = rows.first else { throw ImportError.bad(file, nil, "the file is empty (a CSV export starts with a header row)") }
        let layout: Layout
        if columns != nil {
            layout = .columns
        } else {
            guard let d = detect(header.values) else {
                throw ImportError.bad(
                    file, "line 1", "unknown CSV layout (columns: \(header.values.joined(separator: ", ")))",
                    hint: "say which column holds what with --columns name=COLUMN,username=COLUMN,password=COLUMN,…")
            }
            layout = d
        }
        let index = Dictionary(header.values.enumerated().map { ($1.lowercased().trimmingCharacters(in: .whitespaces), $0) }, uniquingKeysWith: { a, _ in a })
        var out = ImportedFile()
        if let columns {
            for c in columns where index[c.column.lowercased()] == nil {
                throw CofferError(.usage, "--columns: the CSV has no column '\(c.column)'", hint: "its columns are: \(header.values.joined(separator: ", "))")
            }
            let used = Set(columns.map { $0.column.lowercased() })
            let unused = header.values.filter { !used.contains($0.lowercased().trimmingCharacters(in: .whitespaces)) }
            if !unused.isEmpty {
                out.warnings.append(InterchangeWarning(entry: "", "columns not imported (not named in --columns): \(unused.joined(separator: ", "))"))
            }
        }
        // Coffer's own CSV neutralises formula cells (``write``): take the
        // quote off again so that every value reads back as it was.
        if layout == .coffer { header.values = header.values.map(CSV.unneutralised) }
        for var row in rows.dropFirst() {
            if layout == .coffer { row.values = row.values.map(CSV.unneutralised) }
            guard row.values.count == header.values.count else {
                throw ImportError.bad(
                    file, "line \(row.line)", "\(row.values.count) column\(row.values.count == 1 ? "" : "s"), but the header has \(header.values.count)")
            }
            func col(_ name: String) -> String {
                guard let i = index[name] else { return "" }
                return row.values[i]
            }
            var e = InterchangeEntry(name: "", type: .login, origin: "\(file): line \(row.line)")
            switch layout {
            case .chrome:
                e.name = title(col("name"), url: col("url"))
                e.append("username", col("username"), secret: false)
                e.append("password", col("password"), secret: true)
                e.append("url", col("url"), secret: false)
                e.append("notes", col("note").isEmpty ? col("notes") : col("note"), secret: false)
            case .firefox:
                e.name = title("", url: col("url"))
                e.append("username", col("username"), secret: false)
                e.append("password", col("password"), secret: true)
                e.append("url", col("url"), secret: false)
                if !col("httprealm").isEmpty { e.append("http-realm", col("httprealm"), secret: false) }
            case .lastpass:
                let isNote = col("url") == "http://sn"
                e.name = [col("grouping"), slash(title(col("name"), url: col("url")))].filter { !$0.isEmpty }.joined(separator: "/")
                e.type = isNote ? .note : .login
                e.append("username", col("username"), secret: false)
                e.append("password", col("password"), secret: true)
                if !isNote { e.append("url", col("url"), secret: false) }
                e.append("totp", col("totp"), secret: true)
                e.append("notes", col("extra"), secret: isNote)
                if col("fav") == "1" { e.tags.append("favorite") }
            case .bitwarden:
                e.name = [col("folder"), slash(col("name").isEmpty ? "untitled" : col("name"))].filter { !$0.isEmpty }.joined(separator: "/")
                e.type = col("type") == "note" ? .note : .login
                e.append("username", col("login_username"), secret: false)
                e.append("password", col("login_password"), secret: true)
                for u in col("login_uri").split(separator: ",") { e.append("url", String(u), secret: false) }
                e.append("totp", col("login_totp"), secret: true)
                e.append("notes", col("notes"), secret: e.type == .note)
                for line in col("fields").split(separator: "\n") {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let k = line[..<colon].trimmingCharacters(in: .whitespaces)
                    let v = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    e.append(k, v, secret: ItemType.custom.defaultSecrecy(of: k), keepEmpty: true)
                }
                if col("favorite") == "1" { e.tags.append("favorite") }
            case .keepassxc:
                let group = col("group").split(separator: "/").dropFirst().joined(separator: "/")
                e.name = [group, slash(col("title").isEmpty ? "untitled" : col("title"))].filter { !$0.isEmpty }.joined(separator: "/")
                e.append("username", col("username"), secret: false)
                e.append("password", col("password"), secret: true)
                e.append("url", col("url"), secret: false)
                e.append("notes", col("notes"), secret: false)
                e.append("totp", col("totp"), secret: true)
                e.tags = col("tags").split(whereSeparator: { $0 == ";" || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            case .coffer:
                e.name = col("name")
                guard let t = ItemType(rawValue: col("type")) else {
                    throw ImportError.bad(file, "line \(row.line)", "unknown item type '\(col("type"))'")
                }
                e.type = t
                e.tags = col("tags").split(separator: ";").map(String.init)
                if !col("expires").isEmpty {
                    guard let d = Day(col("expires")) else { throw ImportError.bad(file, "line \(row.line)", "expires '\(col("expires"))' is not YYYY-MM-DD") }
                    e.expires = d
                }
                for (i, h) in header.values.enumerated().dropFirst(4) where !row.values[i].isEmpty {
                    e.append(h, row.values[i], secret: t.defaultSecrecy(of: h))
                }
            case .columns:
                for c in columns ?? [] {
                    let v = col(c.column.lowercased())
                    switch c.field {
                    case "name": e.name = [e.name, slash(v)].filter { !$0.isEmpty }.joined(separator: "/")
                    case "folder": e.name = [v, e.name].filter { !$0.isEmpty }.joined(separator: "/")
                    case "tags":
                        e.tags += v.split(whereSeparator: { $0 == ";" || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    case "type":
                        guard let t = ItemType(rawValue: v) else {
                            throw ImportError.bad(
                                file, "line \(row.line)", "unknown item type '\(v)' (known: \(ItemType.allCases.map(\.rawValue).joined(separator: ", ")))")
                        }
                        e.type = t
                    default: e.append(c.field, v, secret: ItemType.login.defaultSecrecy(of: c.field) || c.field == "totp")
                    }
                }
                if columns?.contains(where: { $0.field == "type" }) != true {
                    let names = Set(e.fields.map(\.name))
                    e.type = names.isSubset(of: ["username", "password", "url", "notes", "totp"]) || names.contains("password") ? .login : .custom
                }
            }
            if e.name.isEmpty { e.name = "untitled" }
            e.origin = "\(file): line \(row.line) ('\(e.name)')"
            if e.type == .note && e.field("notes") == nil { e.append("notes", "", secret: true, keepEmpty: true) }
            out.entries.append(e)
        }
        return (out, layout)
    }

    static func slash(_ s: String) -> String { s.replacingOccurrences(of: "/", with: "∕") }

    /// An entry title: the given one, else the URL's host, else `untitled`.
    static func title(_ given: String, url: String) -> String {
        if !given.isEmpty { return slash(given) }
        var rest = Substring(url)
        if let r = rest.range(of: "://") { rest = rest[r.upperBound...] }
        if let at = rest.firstIndex(of: "@"), !rest[..<at].contains("/") { rest = rest[rest.index(after: at)...] }
        let host = rest.prefix { $0 != "/" && $0 != ":" && $0 != "?" && $0 != "#" }
        if !host.isEmpty { return String(host) }
        return url.isEmpty ? "untitled" : slash(url)
    }

    // MARK: Writing

    /// Coffer's CSV: `name,type,tags,expires`, then `username,password,url,
    /// notes,totp`, then every other field name in order. Tags are joined by
    /// `;`. Secrecy is not kept (use `--format json` for a lossless copy).
    /// Attachments cannot be held in a CSV cell: they are left out, with
    /// one warning per item naming them. Unless `formulasAsIs`, every cell
    /// (header included) that a spreadsheet would run as a formula is
    /// written with a leading `'` (``CSV/neutralised(_:)``), counted in
    /// ``ExportedFile/neutralisedCells``; Coffer's reader takes it off.
    public static func write(_ entries: [InterchangeEntry], formulasAsIs: Bool = false) -> ExportedFile {
        let standard = ["username", "password", "url", "notes", "totp"]
        var extra: [String] = []
        var seen = Set(standard)
        var warnings: [InterchangeWarning] = []
        for e in entries {
            let files = e.fields.filter(\.isFile).map { "'\($0.name)'" }
            if !files.isEmpty {
                let what = files.count == 1 ? "attachment \(files[0]) was" : "attachments \(files.joined(separator: ", ")) were"
                warnings.append(InterchangeWarning(entry: e.name, "\(what) not exported: a CSV holds text only (use --format json or keepass-xml)"))
            }
            for f in e.fields where !f.isFile && !seen.contains(f.name) {
                seen.insert(f.name)
                extra.append(f.name)
            }
        }
        let columns = standard + extra.sorted()
        var neutralisedCells = 0
        func cell(_ v: String) -> String {
            if formulasAsIs { return CSV.quote(v) }
            if CSV.isFormula(v) { neutralisedCells += 1 }
            return CSV.quote(CSV.neutralised(v))
        }
        var out = (["name", "type", "tags", "expires"] + columns).map(cell).joined(separator: ",") + "\r\n"
        for e in entries {
            var values = [e.name, e.type.rawValue, e.tags.joined(separator: ";"), e.expires?.description ?? ""]
            for c in columns { values.append(e.fields.first(where: { $0.name == c && !$0.isFile })?.value ?? "") }
            out += values.map(cell).joined(separator: ",") + "\r\n"
        }
        var file = ExportedFile(data: Data(out.utf8), warnings: warnings)
        file.neutralisedCells = neutralisedCells
        return file
    }
}

extension InterchangeEntry {
    func field(_ name: String) -> Field? { fields.first { $0.name == name } }
}
