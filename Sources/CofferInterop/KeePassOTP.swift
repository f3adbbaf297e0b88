import CofferKit
import Foundation

/// The TOTP layouts KeePass-family programs store as entry strings, read
/// into one `otpauth://totp/…` URI for Coffer's `totp` field (what
/// `coffer otp` reads), keeping the period, digits and algorithm
/// (docs/import-export.md#totp-in-keepass-entries):
///
/// - KeePassXC `otp`: an otpauth URI (kept as it is), or KeeOTP's
///   `key=BASE32&step=30&size=6&otpHashMode=sha256`;
/// - KeePassXC/KeeTrayTOTP `TOTP Seed` (base32) + `TOTP Settings`
///   (`PERIOD;DIGITS`, or `PERIOD;S` for Steam Guard);
/// - KeePass 2.47+ `TimeOtp-Secret` (UTF-8) / `-Hex` / `-Base32` /
///   `-Base64`, `TimeOtp-Length`, `TimeOtp-Period`, `TimeOtp-Algorithm`
///   (`HMAC-SHA-1`, `HMAC-SHA-256`, `HMAC-SHA-512`).
public enum KeePassOTP {
    public enum Outcome: Equatable {
        /// The entry has none of these strings.
        case none
        /// The URI, and the strings it replaces.
        case mapped(uri: String, consumed: Set<String>)
        /// The strings are there but cannot be read; `why` names what is
        /// wrong (never a value). The strings stay custom fields.
        case unreadable(why: String, keys: [String])
    }

    static let timeOtpSecrets = ["TimeOtp-Secret-Base32", "TimeOtp-Secret-Hex", "TimeOtp-Secret-Base64", "TimeOtp-Secret"]
    static let timeOtpSettings = ["TimeOtp-Length", "TimeOtp-Period", "TimeOtp-Algorithm"]
    /// Strings that hold a TOTP secret: secret fields when they are kept.
    static let secretKeys: Set<String> = Set(["otp", "otp (KeePass)", "TOTP Seed"] + timeOtpSecrets)

    /// Reads the TOTP strings of an entry (`strings`: key → value) titled
    /// `label`.
    public static func extract(_ strings: [String: String], label: String) -> Outcome {
        if let otp = strings["otp"], !otp.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            let text = otp.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.lowercased().hasPrefix("otpauth:") { return .mapped(uri: text, consumed: ["otp"]) }
            if text.contains("key=") { return keeOTP(text, label: label) }
            // A bare base32 secret (KeePassXC reads one with the defaults).
            guard let secret = try? Base32.decode(text, what: "otp") else {
                return .unreadable(why: "'otp' is neither an otpauth:// URI, nor key=…&step=…, nor a base32 secret", keys: ["otp"])
            }
            return .mapped(uri: uri(secret: secret, label: label, period: 30, digits: 6, algorithm: "SHA1"), consumed: ["otp"])
        }
        if let seed = strings["TOTP Seed"] {
            return seedAndSettings(seed, strings["TOTP Settings"], label: label, hasSettings: strings["TOTP Settings"] != nil)
        }
        if timeOtpSecrets.contains(where: { strings[$0] != nil }) {
            return timeOtp(strings, label: label)
        }
        return .none
    }

    /// `otpauth://totp/LABEL?secret=…&period=…&digits=…&algorithm=…`
    /// (`&encoder=steam` for Steam Guard).
    static func uri(secret: [UInt8], label: String, period: Int, digits: Int, algorithm: String, steam: Bool = false) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let path = label.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        var out = "otpauth://totp/\(path)?secret=\(Base32.encode(secret))&period=\(period)&digits=\(digits)&algorithm=\(algorithm)"
        if steam { out += "&encoder=steam" }
        return out
    }

    /// KeeOTP's query form, as KeePassXC reads it (`Totp::parseSettings`).
    static func keeOTP(_ text: String, label: String) -> Outcome {
        var values: [String: String] = [:]
        for part in text.split(separator: "&") {
            let kv = part.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { continue }
            values[String(kv[0]).lowercased()] = String(kv[1]).removingPercentEncoding ?? String(kv[1])
        }
        guard let key = values["key"], let secret = try? Base32.decode(key, what: "otp"), !secret.isEmpty else {
            return .unreadable(why: "the key of 'otp' (key=…) is not base32", keys: ["otp"])
        }
        guard let period = Int(values["step"] ?? "30"), (1...86400).contains(period) else {
            return .unreadable(why: "the step of 'otp' is not a number of seconds from 1 to 86400", keys: ["otp"])
        }
        guard let digits = Int(values["size"] ?? "6"), (6...8).contains(digits) else {
            return .unreadable(why: "the size of 'otp' is not 6, 7 or 8", keys: ["otp"])
        }
        guard let algorithm = hashName(values["otphashmode"] ?? "sha1") else {
            return .unreadable(why: "the otpHashMode of 'otp' is not sha1, sha256 or sha512", keys: ["otp"])
        }
        return .mapped(uri: uri(secret: secret, label: label, period: period, digits: digits, algorithm: algorithm), consumed: ["otp"])
    }

    /// `TOTP Seed` + `TOTP Settings` (`30;6`, `30;S`; default `30;6`).
    static func seedAndSettings(_ seed: String, _ settings: String?, label: String, hasSettings: Bool) -> Outcome {
        let keys = hasSettings ? ["TOTP Seed", "TOTP Settings"] : ["TOTP Seed"]
        guard let secret = try? Base32.decode(seed.trimmingCharacters(in: .whitespacesAndNewlines), what: "TOTP Seed"), !secret.isEmpty else {
            return .unreadable(why: "'TOTP Seed' is not base32", keys: keys)
        }
        var period = 30
        var digits = 6
        var steam = false
        if let settings, !settings.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = settings.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count >= 2, let p = Int(parts[0]), (1...86400).contains(p) else {
                return .unreadable(why: "'TOTP Settings' is not PERIOD;DIGITS (e.g. 30;6) or PERIOD;S", keys: keys)
            }
            period = p
            if parts[1] == "S" {
                steam = true
                digits = 5
            } else {
                guard let d = Int(parts[1]), (6...8).contains(d) else {
                    return .unreadable(why: "the digits in 'TOTP Settings' are not 6, 7, 8 or S (Steam)", keys: keys)
                }
                digits = d
            }
        }
        return .mapped(uri: uri(secret: secret, label: label, period: period, digits: digits, algorithm: "SHA1", steam: steam), consumed: Set(keys))
    }

    /// KeePass 2.47's `TimeOtp-*` strings (keepass.info/help/base/placeholders.html#otp).
    static func timeOtp(_ strings: [String: String], label: String) -> Outcome {
        let keys = (timeOtpSecrets + timeOtpSettings).filter { strings[$0] != nil }
        let secret: [UInt8]?
        if let v = strings["TimeOtp-Secret-Base32"] {
            secret = try? Base32.decode(v, what: "TimeOtp-Secret-Base32")
        } else if let v = strings["TimeOtp-Secret-Hex"] {
            secret = hex(v)
        } else if let v = strings["TimeOtp-Secret-Base64"] {
            secret = Data(base64Encoded: v.trimmingCharacters(in: .whitespacesAndNewlines)).map { [UInt8]($0) }
        } else {
            secret = strings["TimeOtp-Secret"].map { Array($0.utf8) }
        }
        guard let secret, !secret.isEmpty else {
            let which = timeOtpSecrets.first { strings[$0] != nil } ?? "TimeOtp-Secret"
            return .unreadable(why: "'\(which)' cannot be decoded", keys: keys)
        }
        guard let digits = Int(strings["TimeOtp-Length"]?.trimmingCharacters(in: .whitespaces) ?? "6"), (6...8).contains(digits) else {
            return .unreadable(why: "'TimeOtp-Length' is not 6, 7 or 8", keys: keys)
        }
        guard let period = Int(strings["TimeOtp-Period"]?.trimmingCharacters(in: .whitespaces) ?? "30"), (1...86400).contains(period) else {
            return .unreadable(why: "'TimeOtp-Period' is not a number of seconds from 1 to 86400", keys: keys)
        }
        guard let algorithm = hashName(strings["TimeOtp-Algorithm"] ?? "HMAC-SHA-1") else {
            return .unreadable(why: "'TimeOtp-Algorithm' is not HMAC-SHA-1, HMAC-SHA-256 or HMAC-SHA-512", keys: keys)
        }
        return .mapped(uri: uri(secret: secret, label: label, period: period, digits: digits, algorithm: algorithm), consumed: Set(keys))
    }

    /// `sha1`, `SHA-256`, `HMAC-SHA-512`… → `SHA1`/`SHA256`/`SHA512`.
    static func hashName(_ text: String) -> String? {
        var t = text.trimmingCharacters(in: .whitespaces).uppercased().replacingOccurrences(of: "-", with: "")
        if t.hasPrefix("HMAC") { t.removeFirst(4) }
        return ["SHA1", "SHA256", "SHA512"].contains(t) ? t : nil
    }

    static func hex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8).filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = nibble(digits[i]), let lo = nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
