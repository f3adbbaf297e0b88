import Foundation

/// The SSH wire encoding (RFC 4251 §5): `uint32`, `string`, `mpint`, as
/// the agent protocol and the OpenSSH key formats use it. A reader never
/// traps on input: every length is checked against what is left.
public struct SSHReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var isAtEnd: Bool { offset >= bytes.count }
    public var remaining: Int { bytes.count - offset }

    public mutating func byte() throws(CryptoError) -> UInt8 {
        guard remaining >= 1 else { throw .malformedInput("truncated byte") }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func uint32() throws(CryptoError) -> UInt32 {
        guard remaining >= 4 else { throw .malformedInput("truncated uint32") }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// A `string`: a length and that many bytes.
    public mutating func string() throws(CryptoError) -> [UInt8] {
        let n = Int(try uint32())
        guard n <= remaining else { throw .malformedInput("string length \(n) beyond the \(remaining) bytes left") }
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// A `string` that must be UTF-8 text.
    public mutating func text() throws(CryptoError) -> String {
        let b = try string()
        guard let s = String(validating: b, as: UTF8.self) else { throw .malformedInput("text that is not UTF-8") }
        return s
    }

    /// An `mpint` that must not be negative, without its leading zero
    /// bytes (possibly empty for zero).
    public mutating func positiveMPInt() throws(CryptoError) -> [UInt8] {
        let b = try string()
        if let first = b.first, first & 0x80 != 0 { throw .malformedInput("negative mpint") }
        return Array(b.drop { $0 == 0 })
    }

    /// The bytes left, consumed.
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

/// Builds SSH wire encodings.
public struct SSHWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ b: UInt8) { bytes.append(b) }

    public mutating func uint32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
    }

    public mutating func string(_ b: some Collection<UInt8>) {
        uint32(UInt32(b.count))
        bytes += b
    }

    public mutating func string(_ s: String) { string(Array(s.utf8)) }

    /// An `mpint` of a non-negative big-endian magnitude.
    public mutating func mpint(_ magnitude: some Collection<UInt8>) {
        let m = Array(magnitude.drop { $0 == 0 })
        if let first = m.first, first & 0x80 != 0 {
            string([0] + m)
        } else {
            string(m)
        }
    }

    public mutating func raw(_ b: some Collection<UInt8>) { bytes += b }

    /// Wipes the bytes built so far (for encodings holding a private key).
    public mutating func wipe() {
        bytes.withUnsafeMutableBytes { if let p = $0.baseAddress { Sodium.memzero(p, $0.count) } }
        bytes = []
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the array's storage with zeros (best effort: Swift may
    /// have copied it before).
    package mutating func wipe() {
        withUnsafeMutableBytes { if let p = $0.baseAddress, $0.count > 0 { Sodium.memzero(p, $0.count) } }
        removeAll()
    }
}
