/// The plaintext inside every field version's ciphertext:
/// `u8 flags || u16 nameLength || name (UTF-8) || u32 valueLength || value`.
/// Flag bit 0: the field is secret. Other bits are reserved and must be 0.
public struct FieldPayload: Sendable, Equatable {
    /// The field's name (`key`, `password`) or the metadata name (`@name`).
    public var name: String
    /// The value; empty for a tombstone.
    public var value: [UInt8]
    public var isSecret: Bool

    public init(name: String, value: [UInt8], isSecret: Bool) {
        self.name = name
        self.value = value
        self.isSecret = isSecret
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 7 + name.utf8.count + value.count)
        w.u8(isSecret ? 1 : 0)
        w.blob16(Array(name.utf8))
        w.blob32(value)
        return w.data
    }

    public init(decoding bytes: [UInt8]) throws(FormatError) {
        var r = ByteReader(bytes)
        let flags = try r.u8()
        guard flags & ~1 == 0 else { throw .malformed("reserved payload flags set") }
        guard let n = String(validating: try r.blob16(), as: UTF8.self) else {
            throw .malformed("field name is not UTF-8")
        }
        name = n
        value = try r.blob32()
        isSecret = flags & 1 == 1
        guard r.isAtEnd else { throw .malformed("trailing bytes in field payload") }
    }

    /// The value as text (values are UTF-8 text in this version).
    public var text: String { String(decoding: value, as: UTF8.self) }
}
