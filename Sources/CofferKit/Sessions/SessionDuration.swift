import Foundation

/// Durations as people write them: `15m`, `2s`, `8h`, `1d`, `1h30m`.
/// Every number needs a unit (s, m, h, d).
public enum SessionDuration {
    /// Seconds, or nil when `text` is not a duration.
    public static func parse(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !t.isEmpty else { return nil }
        var total: Int64 = 0
        var digits = ""
        var sawUnit = false
        for ch in t {
            if ch.isASCII, ch.isNumber {
                digits.append(ch)
                continue
            }
            let unit: Int64
            switch ch {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86400
            default: return nil
            }
            guard let n = Int64(digits), n <= 10_000_000 else { return nil }
            total += n * unit
            digits = ""
            sawUnit = true
        }
        guard digits.isEmpty, sawUnit else { return nil }
        return total
    }

    /// `90` → `1m30s`; `3600` → `1h`.
    public static func format(_ seconds: Int64) -> String {
        if seconds <= 0 { return "0s" }
        var s = seconds
        var out = ""
        for (unit, name) in [(Int64(86400), "d"), (3600, "h"), (60, "m"), (1, "s")] where s >= unit {
            out += "\(s / unit)\(name)"
            s %= unit
        }
        return out
    }
}

/// The user's settings file, `$XDG_CONFIG_HOME/coffer/config` (else
/// `~/.config/coffer/config`). One `key = value` per line; `#` starts a
/// comment; blank lines are ignored. A key this build does not know is
/// ignored but reported in ``warnings`` (with the nearest known key, for a
/// typo); newer versions may add keys. See docs/sessions.md.
public struct CofferConfig: Sendable, Equatable {
    /// Idle timeout of a new shell session (`session.timeout`).
    public var sessionTimeout: Int64?
    /// Absolute lifetime of a new shell session (`session.max-lifetime`).
    public var sessionMaxLifetime: Int64?
    /// One line per key this build does not know, e.g. `config:3: unknown
    /// key 'session.timout' (did you mean session.timeout?); ignored`.
    public var warnings: [String] = []

    /// The keys this build reads.
    public static let knownKeys = ["session.timeout", "session.max-lifetime"]

    public init(sessionTimeout: Int64? = nil, sessionMaxLifetime: Int64? = nil) {
        self.sessionTimeout = sessionTimeout
        self.sessionMaxLifetime = sessionMaxLifetime
    }

    /// Where the config file is looked for.
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let d = environment["XDG_CONFIG_HOME"], d.hasPrefix("/") { return d + "/coffer/config" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.config/coffer/config"
    }

    /// Reads the config file; a missing file is an empty config.
    public static func load(path: String) throws(CofferError) -> CofferConfig {
        guard FileManager.default.fileExists(atPath: path) else { return CofferConfig() }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CofferError(.badData, "cannot read the config file \(path) as UTF-8 text", hint: "fix or remove the file")
        }
        return try parse(text, path: path)
    }

    public static func parse(_ text: String, path: String = "config") throws(CofferError) -> CofferConfig {
        var config = CofferConfig()
        for (index, raw) in text.textLines.enumerated() {
            var line = raw
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else {
                throw CofferError(.badData, "\(path):\(index + 1): expected `key = value`", hint: "fix the line or remove it")
            }
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            switch key {
            case "session.timeout", "session.max-lifetime":
                guard let seconds = SessionDuration.parse(value), seconds > 0 else {
                    throw CofferError(.badData, "\(path):\(index + 1): invalid duration '\(value)' for \(key)", hint: "write a duration such as 15m, 2h or 1d")
                }
                if key == "session.timeout" { config.sessionTimeout = seconds } else { config.sessionMaxLifetime = seconds }
            default:
                let near = Suggestion.closest(to: key, among: knownKeys).map { " (did you mean \($0)?)" } ?? ""
                config.warnings.append("\(path):\(index + 1): unknown key '\(key)'\(near); ignored")
            }
        }
        return config
    }
}
