import CofferCrypto

/// A 16-byte random identifier (vault, replica, item).
///
/// Stored inline as two big-endian 64-bit halves: no heap allocation per
/// identifier, and equality, ordering and hashing are a few integer
/// operations (imports of large bundles handle millions of them). The
/// order of the halves is the lexicographic order of the bytes.
public struct Identifier16: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Bytes 0–7 and 8–15, big-endian.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    // Inlinable so that each caller gets a version specialized for its
    // collection type: unspecialized, the generic byte loop cost ~7,000
    // instructions per id (a `coffer ls` of 10,000 items spent 74 M in it).
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard let (h, l) = Halves.load(bytes) else { return nil }
        high = h
        low = l
    }

    /// The raw bytes, always 16 (a new array on each call).
    public var bytes: [UInt8] { Halves.bytes(high, low) }

    /// A new random identifier.
    public static func random() -> Identifier16 { Identifier16(bytes: Random.bytes(16))! }

    /// Lower-case hexadecimal, 32 characters.
    public var hex: String { Hex.encode(bytes) }

    public init?(hex: String) {
        guard let b = Hex.decode(hex), b.count == 16 else { return nil }
        self.init(bytes: b)
    }

    public var description: String { hex }

    public static func < (a: Identifier16, b: Identifier16) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }
}

/// Packing 16 bytes into two big-endian 64-bit halves.
@usableFromInline
enum Halves {
    @inlinable
    static func load(_ bytes: some Collection<UInt8>) -> (UInt64, UInt64)? {
        guard bytes.count == 16 else { return nil }
        var h: UInt64 = 0
        var l: UInt64 = 0
        var i = 0
        for b in bytes {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
            i += 1
        }
        return (h, l)
    }

    static func bytes(_ h: UInt64, _ l: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            out[i] = UInt8(truncatingIfNeeded: h >> UInt64(56 - 8 * i))
            out[8 + i] = UInt8(truncatingIfNeeded: l >> UInt64(56 - 8 * i))
        }
        return out
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

    /// Specialized where it is called (inlinable): the unspecialized
    /// generic needed the collection's iterator type from the runtime
    /// (a demangling and a scan of every protocol conformance in the
    /// binary), about 4 % of a `coffer get`.
    @inlinable
    public static func encode(_ bytes: some Collection<UInt8>) -> String { encode(Array(bytes)) }

    public static func encode(_ bytes: [UInt8]) -> String {
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
