import CofferCrypto

/// A 16-byte random identifier (vault, replica, item).
public struct Identifier16: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw bytes, always 16.
    public let bytes: [UInt8]

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        self.bytes = Array(bytes)
    }

    /// A new random identifier.
    public static func random() -> Identifier16 { Identifier16(bytes: Random.bytes(16))! }

    /// Lower-case hexadecimal, 32 characters.
    public var hex: String { Hex.encode(bytes) }

    public init?(hex: String) {
        guard let b = Hex.decode(hex), b.count == 16 else { return nil }
        bytes = b
    }

    public var description: String { hex }

    public static func < (a: Identifier16, b: Identifier16) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }

    /// Hashes the 16 bytes in one call (the synthesized conformance feeds
    /// them one by one, which dominated merges of large bundles).
    public func hash(into h: inout Hasher) {
        bytes.withUnsafeBytes { h.combine(bytes: $0) }
    }
}

/// Identifies one replica (one vault file on one machine).
public typealias ReplicaID = Identifier16
/// Identifies a vault; every replica of it shares the id.
public typealias VaultID = Identifier16
/// Identifies an item for its whole life, across renames and replicas.
public typealias ItemID = Identifier16

/// Hexadecimal helpers.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
