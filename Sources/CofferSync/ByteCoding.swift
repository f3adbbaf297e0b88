/// A malformed encoding.
public enum FormatError: Error, Equatable, Sendable {
    case truncated
    case malformed(String)
}

/// Appends big-endian integers and byte strings.
public struct ByteWriter: Sendable {
    public private(set) var data: [UInt8] = []
    public init() {}
    public init(capacity: Int) { data.reserveCapacity(capacity) }

    public mutating func u8(_ v: UInt8) { data.append(v) }
    public mutating func u16(_ v: UInt16) {
        data.append(UInt8(v >> 8))
        data.append(UInt8(v & 0xff))
    }
    // One append of the big-endian bytes (not one per byte): the vault
    // MAC's terms and bundle records are mostly ids and counters.
    public mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.bigEndian) { data.append(contentsOf: $0) }
    }
    public mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.bigEndian) { data.append(contentsOf: $0) }
    }
    /// Overwrites 4 bytes at `offset` with `v` (a length or count written
    /// ahead as a placeholder).
    public mutating func setU32(_ v: UInt32, at offset: Int) {
        data[offset] = UInt8(truncatingIfNeeded: v >> 24)
        data[offset + 1] = UInt8(truncatingIfNeeded: v >> 16)
        data[offset + 2] = UInt8(truncatingIfNeeded: v >> 8)
        data[offset + 3] = UInt8(truncatingIfNeeded: v)
    }
    /// Drops the first `n` bytes (already flushed).
    public mutating func removeFirst(_ n: Int) { data.removeFirst(n) }
    /// Number of bytes written.
    public var count: Int { data.count }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    public mutating func bytes(_ b: some Collection<UInt8>) { data.append(contentsOf: b) }
    /// The 16 bytes of an identifier.
    public mutating func id(_ v: Identifier16) {
        withUnsafeBytes(of: (v.high.bigEndian, v.low.bigEndian)) { data.append(contentsOf: $0) }
    }
    /// The 16 bytes of a register id.
    public mutating func id(_ v: RegisterID) {
        withUnsafeBytes(of: (v.high.bigEndian, v.low.bigEndian)) { data.append(contentsOf: $0) }
    }
    /// `u32 length || bytes`.
    public mutating func blob32(_ b: some Collection<UInt8>) {
        u32(UInt32(b.count))
        data.append(contentsOf: b)
    }
    /// `u16 length || bytes`.
    public mutating func blob16(_ b: some Collection<UInt8>) {
        u16(UInt16(b.count))
        data.append(contentsOf: b)
    }
}

/// Reads what ``ByteWriter`` writes, failing cleanly on short input.
public struct ByteReader: Sendable {
    public let data: [UInt8]
    public private(set) var offset = 0
    /// Where reading stops (`data.count` unless a range was given).
    public let end: Int
    public init(_ data: [UInt8]) {
        self.data = data
        end = data.count
    }

    /// Reads `data[range]` only, without copying it.
    public init(_ data: [UInt8], range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= data.count)
        self.data = data
        offset = range.lowerBound
        end = range.upperBound
    }

    public var isAtEnd: Bool { offset == end }
    public var remaining: Int { end - offset }

    public mutating func u8() throws(FormatError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { offset += 1 }
        return data[offset]
    }
    public mutating func u16() throws(FormatError) -> UInt16 {
        guard remaining >= 2 else { throw .truncated }
        defer { offset += 2 }
        return UInt16(data[offset]) << 8 | UInt16(data[offset + 1])
    }
    public mutating func u32() throws(FormatError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated }
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(data[offset + i]) }
        offset += 4
        return v
    }
    public mutating func u64() throws(FormatError) -> UInt64 {
        guard remaining >= 8 else { throw .truncated }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(data[offset + i]) }
        offset += 8
        return v
    }
    public mutating func i64() throws(FormatError) -> Int64 { Int64(bitPattern: try u64()) }
    /// 16 bytes as an identifier.
    public mutating func identifier() throws(FormatError) -> Identifier16 {
        guard remaining >= 16 else { throw .truncated }
        return Identifier16(high: try u64(), low: try u64())
    }
    /// 16 bytes as a register id.
    public mutating func registerID() throws(FormatError) -> RegisterID {
        guard remaining >= 16 else { throw .truncated }
        return RegisterID(high: try u64(), low: try u64())
    }
    public mutating func bytes(_ n: Int) throws(FormatError) -> [UInt8] {
        guard n >= 0, remaining >= n else { throw .truncated }
        defer { offset += n }
        return Array(data[offset..<offset + n])
    }
    public mutating func blob32(max: Int = Int(UInt32.max)) throws(FormatError) -> [UInt8] {
        let n = Int(try u32())
        guard n <= max else { throw .malformed("length \(n) exceeds limit \(max)") }
        return try bytes(n)
    }
    public mutating func blob16() throws(FormatError) -> [UInt8] { try bytes(Int(try u16())) }
}
