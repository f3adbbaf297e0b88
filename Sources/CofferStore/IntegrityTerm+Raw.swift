import CofferCrypto
import CofferSync

/// The "I" and "S" terms (and format 5's "I" and "V") written straight
/// into memory of their exact size (docs/key-hierarchy.md, "Vault MAC"):
/// the one definition of their layout, used by ``IntegrityTerm`` (which
/// returns arrays) and by ``VaultMAC``'s bulk toggles (which reuse one
/// buffer, so a 100,000-item import makes no array per term).
enum RawTerm {
    /// One current version as an item's term lists it: its register, the
    /// version, and the version's vector encoded (`vector.encoded`, made
    /// once: a bulk import stores it too).
    struct Listed {
        let register: RegisterID
        let version: FieldVersion
        let vector: [UInt8]

        /// The versions of `state` in the term's order: by register id,
        /// then dot (replica id, counter) — the primary-key order of
        /// `fieldVersion`, which ``Queries/computeMAC(_:into:rules:)``
        /// scans.
        static func of(_ state: ItemState) -> [Listed] {
            var out: [Listed] = []
            for (rid, list) in state.registers { for v in list { out.append(Listed(register: rid, version: v, vector: v.vector.encoded)) } }
            out.sort(by: precedes)
            return out
        }

        static func precedes(_ a: Listed, _ b: Listed) -> Bool {
            a.register != b.register ? a.register < b.register : a.version.dot < b.version.dot
        }
    }

    /// The item row's part common to every format's "I" term: `"I" || item
    /// id || blob16 policy || blob16 name hash || has-hash || deleted ||
    /// conflict || i64 created || i64 updated`.
    private static func rowSize(_ row: ItemRow) -> Int {
        1 + 16 + 2 + row.policy.rawValue.utf8.count + 2 + (row.nameHash?.count ?? 0) + 3 + 8 + 8
    }

    private static func writeRow(_ row: ItemRow, into w: inout RawByteWriter) {
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
    }

    /// Bytes of an item's term (format 6).
    static func itemSize(_ row: ItemRow, versions: [Listed]) -> Int {
        var size = rowSize(row) + 4 + 16 + 4
        for l in versions { size += listedSize(vectorCount: l.vector.count) }
        return size
    }

    /// Format 6: the row's part, `u32 record length || the record's last
    /// 16 bytes (its Poly1305 tag) || u32 n || n × listed version`, each
    /// version as in ``writeListed(_:into:)``. One term per item: the
    /// item's row, its record and its current versions.
    static func writeItem(_ row: ItemRow, record: [UInt8], versions: [Listed], into w: inout RawByteWriter) {
        writeRow(row, into: &w)
        w.u32(UInt32(truncatingIfNeeded: record.count))
        writeTag(of: record, into: &w)
        w.u32(UInt32(truncatingIfNeeded: versions.count))
        for l in versions { writeListed(l, into: &w) }
    }

    static func listedSize(vectorCount: Int) -> Int { 16 + 16 + 8 + 4 + vectorCount + 8 + 1 + 4 + 16 }

    /// `register id || dot replica || u64 dot counter || blob32 vector ||
    /// i64 written || tombstone || u32 payload length || payload tag`.
    static func writeListed(_ l: Listed, into w: inout RawByteWriter) {
        w.id(l.register.high, l.register.low)
        writeVersionBody(l.version, vector: l.vector, into: &w)
    }

    /// `dot replica || u64 dot counter || blob32 vector || i64 written ||
    /// tombstone || u32 payload length || the payload's last 16 bytes (its
    /// Poly1305 tag)`. A payload shorter than 16 bytes (malformed) gives
    /// its bytes: the term is shorter by the missing bytes.
    private static func writeVersionBody(_ v: FieldVersion, vector: [UInt8], into w: inout RawByteWriter) {
        w.id(v.dot.replica.high, v.dot.replica.low)
        w.u64(v.dot.counter)
        w.u32(UInt32(truncatingIfNeeded: vector.count))
        vector.withUnsafeBufferPointer { w.bytes($0) }
        w.u64(UInt64(bitPattern: v.writtenAt))
        w.u8(v.isTombstone ? 1 : 0)
        w.u32(UInt32(clamping: v.payload.count))
        writeTag(of: v.payload, into: &w)
    }

    /// The last 16 bytes of a sealed box (all of a shorter one).
    private static func writeTag(of sealed: [UInt8], into w: inout RawByteWriter) {
        let n = min(sealed.count, 16)
        sealed.withUnsafeBufferPointer { p in
            w.bytes(UnsafeBufferPointer(rebasing: p[(p.count - n)...]))
        }
    }

    /// Bytes of a format-5 "I" term (``writeFormat5Item(_:record:into:)``).
    static func format5ItemSize(_ row: ItemRow, recordCount: Int) -> Int { rowSize(row) + 4 + recordCount }

    /// Formats 2 to 5: the row's part, `blob32 record` (the whole sealed
    /// record). Kept for the upgrade to format 6, which computes the MAC
    /// the old rules give to fold it out (``MACRules/format5``).
    static func writeFormat5Item(_ row: ItemRow, record: [UInt8], into w: inout RawByteWriter) {
        writeRow(row, into: &w)
        w.u32(UInt32(truncatingIfNeeded: record.count))
        record.withUnsafeBufferPointer { w.bytes($0) }
    }

    /// Bytes of a version's term.
    static func versionSize(vectorCount: Int, history: Bool) -> Int {
        1 + 16 + 16 + 16 + 8 + 4 + vectorCount + 8 + 1 + 4 + 16 + (history ? 8 : 0)
    }

    /// `tag || item id || register id || dot replica || u64 dot counter ||
    /// blob32 vector || i64 written || tombstone || u32 payload length ||
    /// the payload's last 16 bytes [|| i64 superseded]`: a history version
    /// ("S"), and a current version of formats 2 to 5 ("V").
    static func writeVersion(
        tag: UInt8, item: ItemID, register: RegisterID, _ v: FieldVersion, vector: [UInt8], supersededAt: Int64?,
        into w: inout RawByteWriter
    ) {
        w.u8(tag)
        w.id(item.high, item.low)
        w.id(register.high, register.low)
        writeVersionBody(v, vector: vector, into: &w)
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
    /// Toggles the term of an item (``IntegrityTerm/item(_:record:state:)``)
    /// with its versions already listed in order (``RawTerm/Listed/of(_:)``),
    /// written into this accumulator's reused buffer.
    func toggleItem(_ row: ItemRow, record: [UInt8], versions: [RawTerm.Listed]) {
        toggleWritten(size: RawTerm.itemSize(row, versions: versions)) {
            RawTerm.writeItem(row, record: record, versions: versions, into: &$0)
        }
    }

    /// The same from an item's state.
    public func toggleItem(_ row: ItemRow, record: [UInt8], state: ItemState) {
        toggleItem(row, record: record, versions: RawTerm.Listed.of(state))
    }
}
