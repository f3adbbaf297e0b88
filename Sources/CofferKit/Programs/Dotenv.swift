import Foundation

/// The dotenv dialect `coffer run --env-file` reads and `coffer env`
/// writes (docs/references.md#dotenv).
///
/// One `NAME=VALUE` per line; blank lines and lines starting with `#` are
/// skipped; an optional `export ` prefix is allowed. A value is either
/// unquoted (trimmed; ` #` starts a comment), in single quotes (taken
/// literally), or in double quotes (escapes `\\` `\"` `\n` `\r` `\t` `\$`).
/// A quoted value may span lines: its line breaks are part of the value
/// (as docker compose and python-dotenv read it). No variable
/// interpolation: `$X` stays `$X`.
public enum Dotenv {
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var value: String
        public var line: Int
    }

    /// Whether `name` is a portable environment variable name.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    /// Parses a dotenv file. `source` names it in errors.
    public static func parse(_ text: String, source: String) throws(CofferError) -> [Entry] {
        var entries: [Entry] = []
        let lines = text.textLines
        var index = 0
        while index < lines.count {
            let number = index + 1
            var line = lines[index]
            index += 1
            line = line.drop(while: { $0 == " " || $0 == "\t" })
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") || line.hasPrefix("export\t") {
                line = line.dropFirst("export".count).drop(while: { $0 == " " || $0 == "\t" })
            }
            func bad(_ why: String) -> CofferError {
                CofferError(.badData, "\(source):\(number): \(why)", hint: "write NAME=VALUE, NAME='VALUE' or NAME=\"VALUE\" (docs/references.md)")
            }
            guard let eq = line.firstIndex(of: "=") else { throw bad("expected NAME=VALUE") }
            let name = String(line[..<eq]).trimmingSpaces
            guard isValidName(name) else { throw bad("'\(name)' is not a variable name (letters, digits, '_', not starting with a digit)") }
            var rest = line[line.index(after: eq)...].drop(while: { $0 == " " || $0 == "\t" })
            var value = ""
            // An opening quote without its closing one on this line takes
            // the following lines in, joined by the line breaks between them.
            func extend(_ quote: Character) {
                while index < lines.count, !Dotenv.hasClosing(quote, in: rest) {
                    rest = Substring(String(rest) + "\n" + lines[index])
                    index += 1
                }
            }
            if rest.hasPrefix("'") {
                extend("'")
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "'") else { throw bad("unterminated single quote") }
                value = String(rest[..<close])
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("\"") {
                extend("\"")
                rest = rest.dropFirst()
                var closed = false
                var it = rest.startIndex
                while it < rest.endIndex {
                    let c = rest[it]
                    if c == "\"" {
                        closed = true
                        it = rest.index(after: it)
                        break
                    }
                    if c == "\\" {
                        let n = rest.index(after: it)
                        guard n < rest.endIndex else { break }
                        switch rest[n] {
                        case "n": value.append("\n")
                        case "r": value.append("\r")
                        case "t": value.append("\t")
                        case "\\", "\"", "$", "`": value.append(rest[n])
                        default:
                            value.append("\\")
                            value.append(rest[n])
                        }
                        it = rest.index(after: n)
                        continue
                    }
                    value.append(c)
                    it = rest.index(after: it)
                }
                guard closed else { throw bad("unterminated double quote") }
                rest = rest[it...]
            } else {
                var v = rest
                if let hash = v.range(of: " #") ?? v.range(of: "\t#") { v = v[..<hash.lowerBound] }
                value = String(v).trimmingSpaces
                rest = ""
            }
            let tail = rest.drop(while: { $0 == " " || $0 == "\t" })
            guard tail.isEmpty || tail.hasPrefix("#") else { throw bad("unexpected text after the closing quote") }
            entries.append(Entry(name: name, value: value, line: number))
        }
        return entries
    }

    /// Whether `text`, which starts with an opening `quote`, holds its
    /// closing one (for double quotes, one not escaped by a backslash).
    static func hasClosing(_ quote: Character, in text: Substring) -> Bool {
        var it = text.index(after: text.startIndex)
        while it < text.endIndex {
            let c = text[it]
            if c == quote { return true }
            if c == "\\", quote == "\"" {
                it = text.index(after: it)
                guard it < text.endIndex else { return false }
            }
            it = text.index(after: it)
        }
        return false
    }

    /// What ``line(name:value:)`` and ``shellLine(name:value:)`` write in
    /// place of an assignment whose name is not a variable name. It holds
    /// no part of the name (which may hold a newline or shell code, e.g.
    /// from a synced item's stored env mapping) and is a comment in both
    /// formats.
    public static let skippedLine = "# coffer: skipped a variable whose name is not valid"

    /// One `NAME=VALUE` line that ``parse(_:source:)`` reads back exactly:
    /// unquoted when the value is plain, else single-quoted, else
    /// double-quoted with escapes. A `name` that is not a variable name
    /// (``isValidName(_:)``) is never written: the result is then
    /// ``skippedLine``.
    public static func line(name: String, value: String) -> String {
        guard isValidName(name) else { return skippedLine }
        let plain = value.unicodeScalars.allSatisfy { s in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "_-./:@+,%^~".unicodeScalars.contains(s))
        }
        if plain { return "\(name)=\(value)" }
        if !value.contains("'") && !value.contains("\n") && !value.contains("\r") { return "\(name)='\(value)'" }
        var out = "\(name)=\""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "$": out += "\\$"
            case "`": out += "\\`"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// `export NAME='VALUE'` for POSIX shells (`eval "$(coffer env …)"`).
    /// A `name` that is not a variable name is never written (it could
    /// run code under `eval`): the result is then ``skippedLine``.
    public static func shellLine(name: String, value: String) -> String {
        guard isValidName(name) else { return skippedLine }
        return "export \(name)='\(value.replacingOccurrences(of: "'", with: "'\\''"))'"
    }
}

extension String {
    /// The lines of the text: split at each LF on the unicode-scalar
    /// level, each without one trailing CR. (Splitting the `Character`s at
    /// `"\n"` misses CRLF line ends, since `"\r\n"` is one `Character`.)
    var textLines: [Substring] {
        unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            Substring(line.last == "\r" ? line.dropLast() : line)
        }
    }

    var trimmingSpaces: String {
        String(self.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
