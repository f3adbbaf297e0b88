/// Bech32m (BIP 350): a human-readable prefix, the separator `1`, the data
/// in a 32-letter alphabet, and a 6-letter BCH checksum over both, as age
/// writes its recipients. Coffer uses it for member identities
/// (docs/sharing.md, "Identity encoding"): a mistyped or truncated id fails
/// the checksum instead of naming another key. Not a cryptographic
/// primitive (it protects against typing errors, not against forgery).
///
/// BIP 173's 90-character limit does not apply (a public identity is 117
/// characters, like age's post-quantum recipients); everything else is
/// BIP 350's: lower case or upper case but not mixed, the checksum
/// constant 0x2bc830a3, zero padding bits.
package enum Bech32m {
    static let alphabet: [UInt8] = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    static let checksumConstant: UInt32 = 0x2bc8_30a3
    /// Longest string decoded (BIP 350 allows any; this bounds the work).
    package static let maxLength = 1_023

    /// Why a string is not a valid Bech32m string with the expected prefix.
    package enum Failure: Error, Equatable, Sendable {
        case tooLong
        case mixedCase
        /// No `1` separating the prefix from the data, or too little data.
        case noSeparator
        /// The prefix before the last `1` (lower-cased).
        case wrongPrefix(String)
        /// A character outside the alphabet, at a 0-based offset in the string.
        case badCharacter(offset: Int)
        case badChecksum
        /// Padding bits that are not zero, or a data length that is not a
        /// whole number of bytes.
        case badPadding
    }

    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = ((chk & 0x1ff_ffff) << 5) ^ UInt32(v)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    static func expand(_ prefix: [UInt8]) -> [UInt8] {
        prefix.map { $0 >> 5 } + [0] + prefix.map { $0 & 31 }
    }

    /// Regroups bits: 8 → 5 (padding the end with zeros) or 5 → 8
    /// (refusing non-zero padding or a padding of 5 bits or more).
    static func regroup(_ input: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var acc: UInt32 = 0
        var bits = 0
        var out: [UInt8] = []
        out.reserveCapacity(input.count * from / to + 1)
        let mask = UInt32((1 << to) - 1)
        for v in input {
            acc = (acc << UInt32(from)) | UInt32(v)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((acc >> UInt32(bits)) & mask))
            }
            acc &= (1 << UInt32(bits)) - 1
        }
        if pad {
            if bits > 0 { out.append(UInt8((acc << UInt32(to - bits)) & mask)) }
        } else if bits >= from || acc != 0 {
            return nil
        }
        return out
    }

    /// `prefix` (lower-case ASCII) `1` and `bytes` with the checksum.
    package static func encode(prefix: String, bytes: [UInt8]) -> String {
        let hrp = Array(prefix.utf8)
        var data = regroup(bytes, from: 8, to: 5, pad: true) ?? []
        defer { wipe(&data) }
        var values = expand(hrp) + data + [0, 0, 0, 0, 0, 0]
        defer { wipe(&values) }
        let mod = polymod(values) ^ checksumConstant
        var out = hrp + [UInt8(ascii: "1")]
        for v in data { out.append(alphabet[Int(v)]) }
        for i in 0..<6 { out.append(alphabet[Int((mod >> UInt32(5 * (5 - i))) & 31)]) }
        defer { wipe(&out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text` (ASCII, as typed) if it is a valid Bech32m string
    /// whose prefix is `prefix` (compared without case).
    package static func decode(_ text: some Collection<UInt8>, prefix: String) throws(Failure) -> [UInt8] {
        guard text.count <= maxLength else { throw .tooLong }
        var chars = Array(text)
        defer { wipe(&chars) }
        let hasLower = chars.contains { $0 >= 0x61 && $0 <= 0x7a }
        let hasUpper = chars.contains { $0 >= 0x41 && $0 <= 0x5a }
        guard !(hasLower && hasUpper) else { throw .mixedCase }
        for i in chars.indices where chars[i] >= 0x41 && chars[i] <= 0x5a { chars[i] += 0x20 }
        guard let sep = chars.lastIndex(of: UInt8(ascii: "1")), sep >= 1, chars.count - sep - 1 >= 6 else { throw .noSeparator }
        let hrp = Array(chars[..<sep])
        guard hrp.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { throw .wrongPrefix(String(decoding: hrp, as: UTF8.self)) }
        guard hrp == Array(prefix.utf8) else { throw .wrongPrefix(String(decoding: hrp, as: UTF8.self)) }
        var data: [UInt8] = []
        defer { wipe(&data) }
        data.reserveCapacity(chars.count - sep - 1)
        for i in (sep + 1)..<chars.count {
            guard let v = alphabet.firstIndex(of: chars[i]) else { throw .badCharacter(offset: i) }
            data.append(UInt8(v))
        }
        var values = expand(hrp) + data
        defer { wipe(&values) }
        guard polymod(values) == checksumConstant else { throw .badChecksum }
        data.removeLast(6)
        guard let bytes = regroup(data, from: 5, to: 8, pad: false) else { throw .badPadding }
        return bytes
    }

    /// Best-effort wipe of a scratch array (it may hold a secret key's
    /// letters).
    static func wipe(_ a: inout [UInt8]) {
        let n = a.count
        if n > 0 { a.withUnsafeMutableBytes { Sodium.memzero($0.baseAddress!, n) } }
    }
}
