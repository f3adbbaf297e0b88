import CofferCrypto
import CofferSync

/// The "I" and "V"/"S" terms written straight into memory of their exact
/// size (docs/key-hierarchy.md, "Vault MAC"): the one definition of their
/// layout, used by ``IntegrityTerm`` (which returns arrays) and by
/// ``VaultMAC``'s bulk toggles (which reuse one buffer, so a 100,000-item
/// import makes no array per term).
enum RawTerm {
    /// Bytes of an item row's term.
    static func itemSize(_ row: ItemRow, recordCount: Int) -> Int {
        1 + 16 + 2 + row.policy.rawValue.utf8.count + 2 + (row.nameHash?.count ?? 0) + 3 + 8 + 8 + 4 + recordCount
    }

    /// `"I" || item id || blob16 policy || blob16 name hash || has-hash ||
    /// deleted || conflict || i64 created || i64 updated || blob32 record`.
    static func writeItem(_ row: ItemRow, record: [UInt8], into w: inout RawByteWriter) {
        w.u8(UInt8(ascii: "I"))
        w.id(row.id.high, row.id.low)
        var policy = row.policy.rawValue
        policy.withUTF8 { p in
            w.u16(UInt16(truncatingIfNeeded: p.count))
            w.bytes(p)
        }
        let hash = row.nameHash ?? []
        w.u16(UInt16(truncatingIfNeeded: hash.count))
        hash.withUnsafeBufferPointer { w.bytes($0) }
        w.u8(row.nameHash == nil ? 0 : 1)
        w.u8(row.isDeleted ? 1 : 0)
        w.u8(row.hasConflict ? 1 : 0)
        w.u64(UInt64(bitPattern: row.createdAt))
        w.u64(UInt64(bitPattern: row.updatedAt))
        w.u32(UInt32(truncatingIfNeeded: record.count))
        record.withUnsafeBufferPointer { w.bytes($0) }
    }

    /// Bytes of a version's term.
    static func versionSize(vectorCount: Int, history: Bool) -> Int {
        1 + 16 + 16 + 16 + 8 + 4 + vectorCount + 8 + 1 + 4 + 16 + (history ? 8 : 0)
    }

    /// `tag || item id || register id || dot replica || u64 dot counter ||
    /// blob32 vector || i64 written || tombstone || u32 payload length ||
    /// the payload's last 16 bytes (its Poly1305 tag) [|| i64 superseded]`.
    /// A payload shorter than 16 bytes (malformed) gives its bytes and zeros.
    static func writeVersion(
        tag: UInt8, item: ItemID, register: RegisterID, _ v: FieldVersion, vector: [UInt8], supersededAt: Int64?,
        into w: inout RawByteWriter
    ) {
        w.u8(tag)
        w.id(item.high, item.low)
        w.id(register.high, register.low)
        w.id(v.dot.replica.high, v.dot.replica.low)
        w.u64(v.dot.counter)
        w.u32(UInt32(truncatingIfNeeded: vector.count))
        vector.withUnsafeBufferPointer { w.bytes($0) }
        w.u64(UInt64(bitPattern: v.writtenAt))
        w.u8(v.isTombstone ? 1 : 0)
        w.u32(UInt32(clamping: v.payload.count))
        let n = min(v.payload.count, 16)
        v.payload.withUnsafeBufferPointer { p in
            w.bytes(UnsafeBufferPointer(rebasing: p[(p.count - n)...]))
        }
        // `suffix(16)` of a shorter payload is the whole payload: the term
        // is shorter by the missing bytes.
        if let supersededAt { w.u64(UInt64(bitPattern: supersededAt)) }
    }

    /// A term as an array: `size` bytes, written by `body` (which must
    /// write at most `size`; the array is cut to what it wrote).
    static func array(size: Int, _ body: (inout RawByteWriter) -> Void) -> [UInt8] {
        var written = 0
        let out = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var w = RawByteWriter(buffer.baseAddress!)
            body(&w)
            precondition(w.written <= size, "integrity term size")
            written = w.written
            count = written
        }
        return out
    }
}

extension VaultMAC {
    /// Toggles the term of a new item row with its sealed record
    /// (``IntegrityTerm/item(_:record:)``), written into this
    /// accumulator's reused buffer.
    public func toggleItem(_ row: ItemRow, record: [UInt8]) {
        let size = RawTerm.itemSize(row, recordCount: record.count)
        toggleWritten(size: size) { RawTerm.writeItem(row, record: record, into: &$0) }
    }

    /// Toggles the term of a current version
    /// (``IntegrityTerm/version(item:register:_:)``), its vector already
    /// encoded (`v.vector.encoded`).
    public func toggleVersion(item: ItemID, register: RegisterID, _ v: FieldVersion, encodedVector: [UInt8]) {
        let size = RawTerm.versionSize(vectorCount: encodedVector.count, history: false)
        toggleWritten(size: size) {
            RawTerm.writeVersion(
                tag: UInt8(ascii: "V"), item: item, register: register, v, vector: encodedVector, supersededAt: nil, into: &$0)
        }
    }
}
