/// Writes big-endian integers and bytes into memory the caller has already
/// sized: the bulk paths (item records, vault-MAC terms) build each
/// encoding in one buffer of its final size, without `ByteWriter`'s growing
/// array. The caller checks `written` against the size it computed.
package struct RawByteWriter {
    package let base: UnsafeMutablePointer<UInt8>
    package private(set) var written = 0

    package init(_ base: UnsafeMutablePointer<UInt8>) { self.base = base }

    package mutating func u8(_ v: UInt8) {
        base[written] = v
        written += 1
    }

    package mutating func u16(_ v: UInt16) {
        base[written] = UInt8(truncatingIfNeeded: v >> 8)
        base[written + 1] = UInt8(truncatingIfNeeded: v)
        written += 2
    }

    package mutating func u32(_ v: UInt32) {
        UnsafeMutableRawPointer(base + written).storeBytes(of: v.bigEndian, as: UInt32.self)
        written += 4
    }

    package mutating func u64(_ v: UInt64) {
        UnsafeMutableRawPointer(base + written).storeBytes(of: v.bigEndian, as: UInt64.self)
        written += 8
    }

    /// A 16-byte id given as its two big-endian halves.
    package mutating func id(_ high: UInt64, _ low: UInt64) {
        u64(high)
        u64(low)
    }

    package mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) {
        if let start = b.baseAddress, b.count > 0 { (base + written).update(from: start, count: b.count) }
        written += b.count
    }

    package mutating func bytes(_ b: [UInt8]) {
        b.withUnsafeBufferPointer { bytes($0) }
    }

    /// A 16-bit length, then the bytes (the caller keeps them under 64 KiB).
    package mutating func blob16(_ b: [UInt8]) {
        u16(UInt16(b.count))
        bytes(b)
    }

    /// Leaves `n` bytes as they are (zero in a fresh buffer).
    package mutating func skip(_ n: Int) { written += n }

    /// 16 bytes stored as they are in memory (an id kept in its raw form).
    package mutating func raw16(_ v: (UInt64, UInt64)) {
        UnsafeMutableRawPointer(base + written).storeBytes(of: v, as: (UInt64, UInt64).self)
        written += 16
    }
}
