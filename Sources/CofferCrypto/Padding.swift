internal import CSodium

/// ISO/IEC 7816-4 padding with libsodium (`sodium_pad`/`sodium_unpad`):
/// a 0x80 byte and zeros up to the next multiple of the block size (a
/// whole block when the length already is one).
public enum Padding {
    public static func pad(_ bytes: [UInt8], blockSize: Int) -> [UInt8] {
        precondition(blockSize > 0)
        Sodium.ensure()
        var buf = bytes + [UInt8](repeating: 0, count: blockSize)
        var padded = 0
        let rc = buf.withUnsafeMutableBufferPointer { b in
            sodium_pad(&padded, b.baseAddress!, bytes.count, blockSize, b.count)
        }
        precondition(rc == 0, "sodium_pad: buffer too small")
        return Array(buf[0..<padded])
    }

    /// The bytes without their padding; throws when the padding is not
    /// well-formed for `blockSize`.
    public static func unpad(_ bytes: [UInt8], blockSize: Int) throws(CryptoError) -> [UInt8] {
        guard blockSize > 0, !bytes.isEmpty, bytes.count % blockSize == 0 else {
            throw .malformedInput("padded length is not a multiple of the block size")
        }
        Sodium.ensure()
        var unpadded = 0
        let rc = bytes.withUnsafeBufferPointer { b in
            sodium_unpad(&unpadded, b.baseAddress!, b.count, blockSize)
        }
        guard rc == 0 else { throw .malformedInput("malformed padding") }
        return Array(bytes[0..<unpadded])
    }
}
