import CofferCrypto
import Foundation

/// A time-based one-time password generator (RFC 6238 over RFC 4226),
/// read from an `otpauth://totp/…` URI or a bare base32 secret.
public struct TOTP: Sendable, Equatable {
    public var secret: [UInt8]
    public var algorithm: HMACAlgorithm
    public var digits: Int
    public var period: Int
    public var issuer: String?
    public var account: String?
    /// Steam Guard codes (`encoder=steam`, as KeePassXC writes them): five
    /// characters of Steam's alphabet instead of digits.
    public var isSteam = false

    /// Steam Guard's 26 characters (KeePassXC `Totp.cpp`, `STEAM_CHARS`).
    static let steamAlphabet = Array("23456789BCDFGHJKMNPQRTVWXY")

    public init(secret: [UInt8], algorithm: HMACAlgorithm = .sha1, digits: Int = 6, period: Int = 30, issuer: String? = nil, account: String? = nil) {
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.issuer = issuer
        self.account = account
    }

    /// The code at `time` (seconds since 1970), zero-padded to `digits`.
    public func code(at time: Int64) -> String {
        let counter = UInt64(max(0, time) / Int64(period))
        var msg = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { msg[i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
        let mac = algorithm.authenticationCode(key: secret, message: msg)
        // Dynamic truncation (RFC 4226 §5.3).
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let bin =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16)
            | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        if isSteam {
            var rest = bin
            var out = ""
            for _ in 0..<5 {
                out.append(TOTP.steamAlphabet[Int(rest % UInt32(TOTP.steamAlphabet.count))])
                rest /= UInt32(TOTP.steamAlphabet.count)
            }
            return out
        }
        var mod: UInt32 = 1
        for _ in 0..<digits { mod *= 10 }
        let value = String(bin % mod)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// Seconds until the code at `time` changes.
    public func secondsRemaining(at time: Int64) -> Int {
        period - Int(max(0, time) % Int64(period))
    }

    /// Parses the value of a `totp` field: an `otpauth://totp/…` URI or a
    /// bare base32 secret. Errors are `badData` (exit 65) naming the part
    /// that is wrong; the secret itself is never in a message.
    public static func parse(_ text: String) throws(CofferError) -> TOTP {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.lowercased().hasPrefix("otpauth:") else {
            return TOTP(secret: try Base32.decode(trimmed, what: "the TOTP secret"))
        }
        guard let url = URLComponents(string: trimmed) else {
            throw CofferError(.badData, "the otpauth URI is malformed", hint: "it should look like otpauth://totp/Issuer:account?secret=BASE32&issuer=Issuer")
        }
        guard url.scheme?.lowercased() == "otpauth" else {
            throw CofferError(.badData, "the otpauth URI's scheme must be otpauth://")
        }
        guard let host = url.host?.lowercased(), !host.isEmpty else {
            throw CofferError(.badData, "the otpauth URI has no type", hint: "write otpauth://totp/…")
        }
        guard host == "totp" else {
            throw CofferError(
                .badData, "the otpauth URI's type is '\(host.prefix(16))'; only totp is supported", hint: "counter-based (hotp) codes are not supported")
        }
        var label = url.path
        if label.hasPrefix("/") { label.removeFirst() }
        var totp = TOTP(secret: [])
        if !label.isEmpty {
            if let colon = label.firstIndex(of: ":") {
                totp.issuer = String(label[..<colon])
                totp.account = String(label[label.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            } else {
                totp.account = label
            }
        }
        var sawSecret = false
        var digits: String?
        for item in url.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name.lowercased() {
            case "secret":
                totp.secret = try Base32.decode(value, what: "the otpauth URI's secret parameter")
                sawSecret = true
            case "algorithm":
                guard let a = HMACAlgorithm(rawValue: value.uppercased().replacingOccurrences(of: "-", with: "")) else {
                    throw CofferError(.badData, "the otpauth URI's algorithm parameter '\(value.prefix(16))' is not SHA1, SHA256 or SHA512")
                }
                totp.algorithm = a
            case "digits":
                digits = value
            case "encoder":
                // KeePassXC's Steam Guard entries; other encoders are unknown.
                guard value.lowercased() == "steam" else {
                    throw CofferError(.badData, "the otpauth URI's encoder parameter '\(value.prefix(16))' is not steam (the only encoder supported)")
                }
                totp.isSteam = true
            case "period":
                guard let p = Int(value), (1...86400).contains(p) else {
                    throw CofferError(.badData, "the otpauth URI's period parameter '\(value.prefix(16))' is not a number of seconds from 1 to 86400")
                }
                totp.period = p
            case "issuer":
                totp.issuer = value
            default:
                continue // image, counter of other types, vendor extensions
            }
        }
        guard sawSecret else {
            throw CofferError(.badData, "the otpauth URI has no secret parameter", hint: "it should contain ?secret=BASE32")
        }
        if totp.isSteam {
            // Steam Guard codes are always five characters.
            totp.digits = 5
        } else if let value = digits {
            guard let d = Int(value), (6...8).contains(d) else {
                throw CofferError(.badData, "the otpauth URI's digits parameter '\(value.prefix(16))' is not 6, 7 or 8")
            }
            totp.digits = d
        }
        return totp
    }
}

/// RFC 4648 base32 (the alphabet of TOTP secrets).
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes bytes as upper-case base32 without padding (as otpauth URIs
    /// carry TOTP secrets).
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = (buffer << 8) | UInt32(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base32, case-insensitively, ignoring spaces and hyphens
    /// (as secrets are often shown in groups) and optional `=` padding.
    /// `what` names the input in the error (exit 65).
    public static func decode(_ text: String, what: String) throws(CofferError) -> [UInt8] {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() {
            table[Int(c)] = Int8(i)
            if c >= UInt8(ascii: "A") { table[Int(c) + 32] = Int8(i) } // lower case letters
        }
        var body = Array(text.utf8).filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") }
        while body.last == UInt8(ascii: "=") { body.removeLast() }
        guard !body.isEmpty else {
            throw CofferError(.badData, "\(what) is empty", hint: "give the base32 secret (letters A–Z and digits 2–7) the service showed")
        }
        var out: [UInt8] = []
        out.reserveCapacity(body.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for (i, c) in body.enumerated() {
            let v = table[Int(c)]
            guard v >= 0 else {
                throw CofferError(
                    .badData, "\(what) is not base32: character \(i + 1) is not a letter A–Z or a digit 2–7", hint: "copy the secret again from the service")
            }
            buffer = (buffer << 5) | UInt32(v)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // A valid encoding leaves fewer than 5 bits over (RFC 4648 §6:
        // lengths 1, 3 and 6 mod 8 cannot occur).
        guard [0, 2, 4, 5, 7].contains(body.count % 8) else {
            throw CofferError(
                .badData, "\(what) has \(body.count) base32 characters, a length no base32 encoding has", hint: "copy the whole secret again from the service")
        }
        return out
    }
}
