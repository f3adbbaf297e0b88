/// Encoding of the records inside a bundle's stream
/// (docs/bundle-format.md §Records).
///
/// ```
/// record  = u8 type (0x01 = item) || u32 body length || body
/// item    = item id (16) || u32 version count (≥ 1) || versions
/// version = register id (16) || dot replica (16) || dot counter (u64)
///           || vector || written at (i64 ms) || u8 flags (bit 0: tombstone)
///           || u32 payload length || payload (nonce || ciphertext || tag)
/// ```
/// Versions are sorted by (register id, dot replica, dot counter), each at
/// most once; records are sorted by item id, each item at most once.
public enum BundleRecord {
    /// Smallest payload: AEAD overhead (40) + smallest ``FieldPayload`` (7).
    public static let minPayloadLength = 47

    /// Encodes an item record (type, length and body) into `w`.
    public static func encodeItem(_ state: ItemState, into w: inout ByteWriter) {
        let start = w.count
        w.u8(BundleFormat.recordItem)
        w.u32(0) // body length, set below
        w.id(state.id)
        let rids = state.registers.keys.sorted()
        var n: UInt32 = 0
        for rid in rids { n += UInt32(state.registers[rid]!.count) }
        w.u32(n)
        for rid in rids {
            for v in state.registers[rid]!.sorted(by: { $0.dot < $1.dot }) {
                encodeVersion(v, register: rid, into: &w)
            }
        }
        w.setU32(UInt32(w.count - start - 5), at: start + 1)
    }

    static func encodeVersion(_ v: FieldVersion, register: RegisterID, into w: inout ByteWriter) {
        w.id(register)
        w.id(v.dot.replica)
        w.u64(v.dot.counter)
        w.bytes(v.vector.encoded)
        w.i64(v.writtenAt)
        w.u8(v.isTombstone ? 1 : 0)
        w.blob32(v.payload)
    }

    /// Encodes one item record as bytes.
    public static func encodedItem(_ state: ItemState) -> [UInt8] {
        var w = ByteWriter()
        encodeItem(state, into: &w)
        return w.data
    }

    /// Decodes an item record body, enforcing every rule of the spec.
    public static func decodeItem(body: [UInt8]) throws(BundleError) -> ItemState {
        var r = ByteReader(body)
        return try decodeItem(reading: &r)
    }

    /// Decodes an item record body that fills `r` exactly (a reader over
    /// a range of a chunk: no copy of the body).
    public static func decodeItem(reading r: inout ByteReader) throws(BundleError) -> ItemState {
        do {
            let id = try r.identifier()
            let n = try r.u32()
            guard n >= 1 else { throw BundleError.malformedRecord("an item record without versions") }
            var state = ItemState(id: id)
            var last: (RegisterID, Dot)?
            for _ in 0..<n {
                let rid = try r.registerID()
                let replica = try r.identifier()
                let counter = try r.u64()
                guard counter > 0 else { throw BundleError.malformedRecord("a version with counter 0") }
                let dot = Dot(replica: replica, counter: counter)
                let vector = try VersionVector(reading: &r)
                let writtenAt = try r.i64()
                let flags = try r.u8()
                guard flags & ~1 == 0 else { throw BundleError.malformedRecord("reserved version flags set") }
                let payload = try r.blob32(max: BundleFormat.maxRecordLength)
                guard payload.count >= minPayloadLength else { throw BundleError.malformedRecord("a payload shorter than \(minPayloadLength) bytes") }
                if let (lr, ld) = last, !(lr < rid || (lr == rid && ld < dot)) {
                    throw BundleError.malformedRecord("versions out of order or repeated")
                }
                last = (rid, dot)
                state.registers[rid, default: []].append(
                    FieldVersion(dot: dot, vector: vector, writtenAt: writtenAt, isTombstone: flags & 1 == 1, payload: payload))
            }
            guard r.isAtEnd else { throw BundleError.malformedRecord("trailing bytes in an item record") }
            return state
        } catch let e as BundleError {
            throw e
        } catch FormatError.truncated {
            throw .malformedRecord("an item record is shorter than its fields")
        } catch FormatError.malformed(let why) {
            throw .malformedRecord(why)
        } catch {
            throw .malformedRecord("\(error)")
        }
    }
}
