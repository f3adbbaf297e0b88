import CofferCrypto

/// The plaintext inside every field version's ciphertext:
/// `u8 flags || u16 nameLength || name (UTF-8) || u32 valueLength || value`,
/// optionally padded. Flag bit 0: the field is secret. Flag bit 1: the
/// whole plaintext is padded (ISO/IEC 7816-4, libsodium's `sodium_pad`) to
/// a multiple of ``padBlock`` bytes, so a stored or exported payload does
/// not give its name's and value's exact lengths. Flag bit 2: the value is
/// a file's bytes (an attachment), not text. Other bits are reserved and
/// must be 0.
public struct FieldPayload: Sendable, Equatable {
    /// The field's name (`key`, `password`) or the metadata name (`@name`).
    public var name: String
    /// The value; empty for a tombstone.
    public var value: [UInt8]
    public var isSecret: Bool
    /// The value is a file's bytes (an attachment), not UTF-8 text.
    public var isFile: Bool

    public init(name: String, value: [UInt8], isSecret: Bool, isFile: Bool = false) {
        self.name = name
        self.value = value
        self.isSecret = isSecret
        self.isFile = isFile
    }

    static let secretFlag: UInt8 = 1
    static let paddedFlag: UInt8 = 2
    static let fileFlag: UInt8 = 4

    /// Block size of padded payloads (flag bit 1).
    public static let padBlock = 64

    /// The padded encoding (flag bit 1), as the vault stores it.
    public var paddedEncoding: [UInt8] {
        var plain = encoded
        plain[0] |= FieldPayload.paddedFlag
        return Padding.pad(plain, blockSize: Self.padBlock)
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 7 + name.utf8.count + value.count)
        w.u8((isSecret ? FieldPayload.secretFlag : 0) | (isFile ? FieldPayload.fileFlag : 0))
        w.blob16(Array(name.utf8))
        w.blob32(value)
        return w.data
    }

    public init(decoding raw: [UInt8]) throws(FormatError) {
        var bytes = raw
        if let first = raw.first, first & FieldPayload.paddedFlag != 0 {
            do { bytes = try Padding.unpad(raw, blockSize: Self.padBlock) } catch {
                throw .malformed("malformed field payload padding")
            }
        }
        var r = ByteReader(bytes)
        let flags = try r.u8()
        guard flags & ~(FieldPayload.secretFlag | FieldPayload.paddedFlag | FieldPayload.fileFlag) == 0 else {
            throw .malformed("reserved payload flags set")
        }
        guard let n = String(validating: try r.blob16(), as: UTF8.self) else {
            throw .malformed("field name is not UTF-8")
        }
        name = n
        value = try r.blob32()
        isSecret = flags & FieldPayload.secretFlag != 0
        isFile = flags & FieldPayload.fileFlag != 0
        guard r.isAtEnd else { throw .malformed("trailing bytes in field payload") }
    }

    /// The value as text (every value but an attachment's is UTF-8 text).
    public var text: String { String(decoding: value, as: UTF8.self) }
}
