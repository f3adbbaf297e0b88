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

    /// `backslashEscapes`: KeePass's "KeePass CSV (1.x)" dialect, where a
    /// quoted field writes `"` as `\"` and `\` as `\\` (KeePass 2's
    /// `KeePassCsv1x.WriteCsvString`).
    public static func parse(_ text: String, file: String, backslashEscapes: Bool = false) throws(CofferError) -> [Row] {
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
                if backslashEscapes && c == "\\" {
                    guard let n = next() else { break }
                    if n == "\n" { line += 1 }
                    field.unicodeScalars.append(n)
                } else if c == "\"" {
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
        case onePassword = "1password"
        case keepass

        /// The columns (lower case) a row must have: its name, username,
        /// password and URL. A shorter row that lacks only later columns is
        /// read as if those cells were empty (docs/import-export.md#csv).
        var neededColumns: Set<String> {
            switch self {
            case .chrome: return ["name", "url", "username", "password"]
            case .firefox: return ["url", "username", "password"]
            case .bitwarden: return ["type", "name", "login_uri", "login_username", "login_password"]
            case .keepassxc: return ["group", "title", "username", "password", "url"]
            case .lastpass: return ["url", "username", "password", "name"]
            case .onePassword: return ["title", "url", "username", "password"]
            case .keepass: return ["account", "login name", "password", "web site"]
            case .coffer: return ["name", "type"]
            case .columns: return []
            }
        }
    }

    /// The header KeePass 2 writes for "KeePass CSV (1.x)", byte for byte.
    static let keePassHeader = "\"Account\",\"Login Name\",\"Password\",\"Web Site\",\"Comments\""

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
        if s.isSuperset(of: ["title", "url", "username", "password", "otpauth"]) { return .onePassword }
        if s.isSuperset(of: ["account", "login name", "password", "web site", "comments"]) { return .keepass }
        if s.isSuperset(of: ["name", "url", "username", "password"]) { return .chrome }
        return nil
    }

    /// Reads a CSV export. `lenient`: a row that cannot be read (a wrong
    /// number of cells, an unknown type) is skipped with a warning naming
    /// its line and why, instead of refusing the file.
    public static func read(_ data: Data, file: String, columns: [(field: String, column: String)]? = nil, lenient: Bool = false) throws(CofferError)
        -> (ImportedFile, Layout)
    {
        let text = try ImportError.text(data, file: file)
        let rows = try CSV.parse(text, file: file, backslashEscapes: text.hasPrefix(keePassHeader))
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
        var needed = layout.neededColumns
        if let columns {
            for c in columns where index[c.column.lowercased()] == nil {
                throw CofferError(.usage, "--columns: the CSV has no column '\(c.column)'", hint: "its columns are: \(header.values.joined(separator: ", "))")
            }
            let used = Set(columns.map { $0.column.lowercased() })
            let unused = header.values.filter { !used.contains($0.lowercased().trimmingCharacters(in: .whitespaces)) }
            if !unused.isEmpty {
                out.warnings.append(InterchangeWarning(entry: "", "columns not imported (not named in --columns): \(unused.joined(separator: ", "))"))
            }
            needed = Set(columns.filter { $0.field == "name" || $0.field == "password" }.map { $0.column.lowercased() })
        }
        // Coffer's own CSV neutralises formula cells (``write``): take the
        // quote off again so that every value reads back as it was.
        if layout == .coffer { header.values = header.values.map(CSV.unneutralised) }
        let width = header.values.count
        let names = header.values.map { $0.lowercased().trimmingCharacters(in: .whitespaces) }
        // Columns the layout read, and columns with a value in some row:
        // the difference is warned about once, by name (never a value).
        var read = Set<String>()
        var holdsValue = [Bool](repeating: false, count: width)
        var skipped = 0
        for var row in rows.dropFirst() {
            if layout == .coffer { row.values = row.values.map(CSV.unneutralised) }
            do throws(CofferError) {
                if row.values.count > width, row.values[width...].allSatisfy(\.isEmpty) {
                    // Trailing empty cells (a comma at the end of the line).
                    row.values.removeLast(row.values.count - width)
                } else if row.values.count < width, names[row.values.count...].allSatisfy({ !needed.contains($0) }) {
                    // Only trailing cells are missing, none the entry needs
                    // (Chrome leaves out an empty `note`): they are empty.
                    row.values += [String](repeating: "", count: width - row.values.count)
                }
                guard row.values.count == width else {
                    throw ImportError.bad(
                        file, "line \(row.line)", "\(row.values.count) column\(row.values.count == 1 ? "" : "s"), but the header has \(width)",
                        hint: "fix that line, or add --lenient to skip such lines (each is named); nothing was imported")
                }
                for (i, v) in row.values.enumerated() where !v.isEmpty { holdsValue[i] = true }
                out.entries.append(try entry(row, layout: layout, header: header.values, index: index, columns: columns, file: file, read: &read))
            } catch {
                guard lenient else { throw error }
                skipped += 1
                let why = error.message.hasPrefix("\(file): ") ? String(error.message.dropFirst(file.count + 2)) : error.message
                out.warnings.append(InterchangeWarning(entry: "", "\(file): \(why): this line was skipped (--lenient)"))
            }
        }
        if layout != .columns && layout != .coffer {
            let unmapped = names.enumerated().filter { holdsValue[$0.offset] && !read.contains($0.element) }.map { header.values[$0.offset] }
            if !unmapped.isEmpty {
                out.warnings.append(
                    InterchangeWarning(
                        entry: "",
                        "\(file): column\(unmapped.count == 1 ? "" : "s") \(unmapped.joined(separator: ", ")) \(unmapped.count == 1 ? "has" : "have") values but \(unmapped.count == 1 ? "is" : "are") not imported (coffer has no place for \(unmapped.count == 1 ? "it" : "them"))"
                    ))
            }
        }
        if skipped > 0 {
            out.warnings.append(
                InterchangeWarning(entry: "", "\(file): \(skipped) line\(skipped == 1 ? " was" : "s were") skipped (--lenient); the rest was imported"))
        }
        return (out, layout)
    }

    /// One row as an entry; `read` collects the columns looked at.
    static func entry(
        _ row: CSV.Row, layout: Layout, header: [String], index: [String: Int], columns: [(field: String, column: String)]?, file: String,
        read: inout Set<String>
    ) throws(CofferError) -> InterchangeEntry {
        func col(_ name: String) -> String {
            read.insert(name)
            guard let i = index[name] else { return "" }
            return row.values[i]
        }
        func tagList(_ v: String) -> [String] {
            v.split(whereSeparator: { $0 == ";" || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
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
            // LastPass separates sub-folders with `\` (`Emails\WS`).
            let folder = col("grouping").split(separator: "\\").map { slash(String($0)) }.filter { !$0.isEmpty }.joined(separator: "/")
            e.name = [folder, slash(title(col("name"), url: col("url")))].filter { !$0.isEmpty }.joined(separator: "/")
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
            // One `name: value` per line (LF, or CRLF once the file went
            // through Windows).
            for line in col("fields").split(whereSeparator: \.isNewline) {
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
            e.append("totp", normalisedTOTP(col("totp"), label: col("title")), secret: true)
            e.tags = tagList(col("tags"))
        case .onePassword:
            e.name = title(col("title"), url: col("url"))
            e.append("username", col("username"), secret: false)
            e.append("password", col("password"), secret: true)
            e.append("url", col("url"), secret: false)
            e.append("totp", col("otpauth"), secret: true)
            e.append("notes", col("notes"), secret: false)
            e.tags = tagList(col("tags"))
            if ["true", "1"].contains(col("favorite").lowercased()) { e.tags.append("favorite") }
            if ["true", "1"].contains(col("archived").lowercased()) { e.tags.append("archived") }
        case .keepass:
            e.name = slash(col("account").isEmpty ? "untitled" : col("account"))
            e.append("username", col("login name"), secret: false)
            e.append("password", col("password"), secret: true)
            e.append("url", col("web site"), secret: false)
            e.append("notes", col("comments"), secret: false)
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
            for (i, h) in header.enumerated().dropFirst(4) where !row.values[i].isEmpty {
                e.append(h, row.values[i], secret: t.defaultSecrecy(of: h))
            }
        case .columns:
            for c in columns ?? [] {
                let v = col(c.column.lowercased())
                switch c.field {
                case "name": e.name = [e.name, slash(v)].filter { !$0.isEmpty }.joined(separator: "/")
                case "folder": e.name = [v, e.name].filter { !$0.isEmpty }.joined(separator: "/")
                case "tags": e.tags += tagList(v)
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
        return e
    }

    /// A TOTP cell as an otpauth URI when it is in one of KeePassXC's other
    /// forms (``KeePassOTP``); otherwise as it is.
    static func normalisedTOTP(_ value: String, label: String) -> String {
        guard !value.isEmpty, case .mapped(let uri, _) = KeePassOTP.extract(["otp": value], label: label) else { return value }
        return uri
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
