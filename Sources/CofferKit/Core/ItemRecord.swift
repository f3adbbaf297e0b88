import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// One item's integrity record (docs/key-hierarchy.md, "Item records"):
/// what a listing shows, and a digest of the dot and authentication tag of
/// every current version (format 2 records; format 1 listed them), sealed
/// under the record key and bound to the vault id and item id. Everything in the clear that decides what a read prints or
/// what an export carries — the sync policy, the deleted flag, which
/// versions are current — is checked against it on every read of the item.
package struct ItemRecord: Equatable {
    var name: String
    var type: String
    var tags: [String]
    var source: String?
    var expires: String?
    var username: String?
    var url: String?
    var policy: SyncPolicy
    var isDeleted: Bool
    var hasConflict: Bool
    var updatedAt: Int64
    /// The replica of the newest write (largest write time, then dot).
    var lastReplica: ReplicaID?
    /// ``digest(of:)`` of the current versions (read from a format-1
    /// record's list, which format 2 replaced by the digest).
    var versionsDigest: [UInt8]

    /// Records written since vault format 6: the versions' digest in place
    /// of their list (a record of a five-field item shrinks from 384 to 128
    /// bytes of plaintext). Format-1 records are still read.
    static let formatVersion: UInt8 = 2
    /// Bytes of one version in a format-1 record's list and in the digest's
    /// input: register id, dot replica id, u64 dot counter, tag.
    static let refBytes = 56
    /// Plaintexts are padded to a multiple of this many bytes, so a
    /// record's size does not give its name's exact length.
    static let padBlock = 128

    /// The digest of an item's current versions.
    static func digest(of state: ItemState) -> [UInt8] {
        var refs: [RawRef] = []
        for (rid, versions) in state.registers { for v in versions { refs.append(RawRef(register: rid, dot: v.dot, payload: v.payload)) } }
        return digest(of: refs)
    }

    static func digest(of refs: [RawRef]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            writeDigest(of: refs, into: out.baseAddress!)
            count = 32
        }
    }

    /// `BLAKE2b-256(u32be n || n × (register id || dot replica id || u64be
    /// dot counter || tag))`, the versions sorted by register id, then dot;
    /// a tag shorter than 16 bytes (a malformed payload) padded with zeros.
    /// Writes the digest (32 bytes) at `out`: its input is built in a
    /// temporary buffer (on the stack for a usual item).
    static func writeDigest(of unsorted: [RawRef], into out: UnsafeMutablePointer<UInt8>) {
        var refs = unsorted
        refs.sort { a, b in a.register != b.register ? a.register < b.register : a.dot < b.dot }
        let size = 4 + refs.count * refBytes
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer in
            var w = RawByteWriter(buffer.baseAddress!)
            w.u32(UInt32(refs.count))
            for v in refs {
                w.id(v.register.high, v.register.low)
                w.id(v.dot.replica.high, v.dot.replica.low)
                w.u64(v.dot.counter)
                w.raw16(v.tag)
            }
            precondition(w.written == size, "versions digest size")
            KeyedHash.digest(UnsafeRawBufferPointer(buffer), into: UnsafeMutableRawBufferPointer(start: out, count: 32))
        }
    }

    static func associatedData(vault: VaultID, item: ItemID) -> [UInt8] {
        var w = ByteWriter(capacity: 48)
        w.bytes(Array("coffer-item-record-v1".utf8))
        w.id(vault)
        w.id(item)
        return w.data
    }

    var encoded: [UInt8] {
        Self.encode(
            texts: Texts(
                name: Array(name.utf8), type: Array(type.utf8), tags: Array(tags.joined(separator: "\n").utf8),
                source: source.map { Array($0.utf8) }, expires: expires.map { Array($0.utf8) },
                username: username.map { Array($0.utf8) }, url: url.map { Array($0.utf8) }),
            policy: policy, isDeleted: isDeleted, hasConflict: hasConflict, updatedAt: updatedAt, lastReplica: lastReplica,
            versionsDigest: versionsDigest)
    }

    /// The UTF-8 texts of a record, as stored (see ``encode(texts:policy:isDeleted:hasConflict:updatedAt:lastReplica:versions:)``).
    struct Texts {
        var name: [UInt8]
        var type: [UInt8]
        /// The tags joined by newlines.
        var tags: [UInt8]
        var source: [UInt8]?
        var expires: [UInt8]?
        var username: [UInt8]?
        var url: [UInt8]?
    }

    /// The padded plaintext of a record, written straight into one buffer
    /// of its final size (no intermediate strings or arrays: a bulk import
    /// builds one per item). A text longer than 64 KiB is cut
    /// (``fitted(_:)``).
    static func encode(
        texts: Texts, policy: SyncPolicy, isDeleted: Bool, hasConflict: Bool, updatedAt: Int64,
        lastReplica: ReplicaID?, versionsDigest: [UInt8]
    ) -> [UInt8] {
        precondition(versionsDigest.count == 32, "versions digest size")
        return encode(texts: texts, policy: policy, isDeleted: isDeleted, hasConflict: hasConflict, updatedAt: updatedAt, lastReplica: lastReplica) {
            w in w.bytes(versionsDigest)
        }
    }

    /// The same, the digest taken of `versions` (any order) straight into
    /// the plaintext.
    static func encode(
        texts: Texts, policy: SyncPolicy, isDeleted: Bool, hasConflict: Bool, updatedAt: Int64,
        lastReplica: ReplicaID?, versions: [RawRef]
    ) -> [UInt8] {
        encode(texts: texts, policy: policy, isDeleted: isDeleted, hasConflict: hasConflict, updatedAt: updatedAt, lastReplica: lastReplica) {
            w in
            writeDigest(of: versions, into: w.base + w.written)
            w.skip(32)
        }
    }

    private static func encode(
        texts: Texts, policy: SyncPolicy, isDeleted: Bool, hasConflict: Bool, updatedAt: Int64,
        lastReplica: ReplicaID?, digest: (inout RawByteWriter) -> Void
    ) -> [UInt8] {
        var t = texts
        t.name = fitted(t.name)
        t.type = fitted(t.type)
        t.tags = fitted(t.tags)
        let optionals = [t.source, t.expires, t.username, t.url].map { $0.map(fitted) }
        var size = 1 + 1 + 8 + 2 + t.name.count + 2 + t.type.count + 2 + t.tags.count
        for text in optionals { size += 1 + 2 + (text?.count ?? 0) }
        size += 1 + 16 + 32
        let padded = (size / padBlock + 1) * padBlock
        var out = [UInt8](repeating: 0, count: padded)
        out.withUnsafeMutableBufferPointer { buffer in
            var w = RawByteWriter(buffer.baseAddress!)
            w.u8(formatVersion)
            w.u8((isDeleted ? 1 : 0) | (hasConflict ? 2 : 0) | (policy == .localOnly ? 4 : 0))
            w.u64(UInt64(bitPattern: updatedAt))
            w.blob16(t.name)
            w.blob16(t.type)
            w.blob16(t.tags)
            for text in optionals {
                w.u8(text == nil ? 0 : 1)
                w.blob16(text ?? [])
            }
            w.u8(lastReplica == nil ? 0 : 1)
            if let lastReplica { w.id(lastReplica.high, lastReplica.low) } else { w.skip(16) }
            digest(&w)
            precondition(w.written == size, "item record size")
        }
        return out
    }

    /// A current version as the digest takes it, without references (a
    /// bulk import sorts one list per item): the tag is the payload's last
    /// 16 bytes as they lie in memory.
    struct RawRef {
        var register: RegisterID
        var dot: Dot
        var tag: (UInt64, UInt64)

        init(register: RegisterID, dot: Dot, tag: [UInt8]) {
            self.init(register: register, dot: dot, payload: tag)
        }

        /// The tag of `payload`: its last 16 bytes; a shorter (malformed)
        /// payload gives its bytes followed by zeros, like `suffix(16)`
        /// padded.
        init(register: RegisterID, dot: Dot, payload: [UInt8]) {
            self.register = register
            self.dot = dot
            var t: (UInt64, UInt64) = (0, 0)
            let n = min(payload.count, 16)
            withUnsafeMutableBytes(of: &t) { dst in
                payload.withUnsafeBytes { src in
                    dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[(src.count - n)...]))
                }
            }
            tag = t
        }
    }

    /// Longest text a record holds (its `u16` length).
    static let maxTextBytes = Int(UInt16.max)

    /// `text` cut to ``maxTextBytes`` at a character boundary when longer
    /// (a url or username of more than 64 KiB: the listing shows its start;
    /// reads show the whole value). `text` is UTF-8.
    static func fitted(_ text: [UInt8]) -> [UInt8] {
        guard text.count > maxTextBytes else { return text }
        var end = maxTextBytes
        while end > 0 && text[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(text[..<end])
    }

    /// The bytes a record stores for a field value shown as text: the
    /// value itself when it is valid UTF-8 (always for ASCII), otherwise
    /// its repaired decoding (what `String(decoding:as:)` makes of it).
    static func storedText(_ value: [UInt8]) -> [UInt8] {
        if value.allSatisfy({ $0 < 0x80 }) { return value }
        return Array(String(decoding: value, as: UTF8.self).utf8)
    }

    /// The stored form of the `@tags` text: the tags (split at newlines,
    /// empty ones dropped) joined by single newlines.
    static func storedTags(_ text: [UInt8]) -> [UInt8] {
        let newline = UInt8(ascii: "\n")
        var clean = text.first != newline && text.last != newline
        if clean {
            for i in text.indices.dropFirst() where text[i] == newline && text[i - 1] == newline {
                clean = false
                break
            }
        }
        if clean { return text }
        return Array(String(decoding: text, as: UTF8.self).split(separator: "\n").joined(separator: "\n").utf8)
    }

    init(
        name: String, type: String, tags: [String], source: String?, expires: String?, username: String?, url: String?,
        policy: SyncPolicy, isDeleted: Bool, hasConflict: Bool, updatedAt: Int64, lastReplica: ReplicaID?, versionsDigest: [UInt8]
    ) {
        self.name = name
        self.type = type
        self.tags = tags
        self.source = source
        self.expires = expires
        self.username = username
        self.url = url
        self.policy = policy
        self.isDeleted = isDeleted
        self.hasConflict = hasConflict
        self.updatedAt = updatedAt
        self.lastReplica = lastReplica
        self.versionsDigest = versionsDigest
    }

    /// `withVersions: false` (listings) stops after the listed fields and
    /// leaves ``versionsDigest`` empty: a listing never compares versions.
    /// Reads format 2 and format 1 (a vault upgraded to vault format 6
    /// keeps its records until each item's next write).
    init(decoding bytes: [UInt8], withVersions: Bool = true) throws(FormatError) {
        var r = ByteReader(bytes)
        let version = try r.u8()
        guard version == 1 || version == Self.formatVersion else { throw .malformed("unknown item record version") }
        let flags = try r.u8()
        guard flags & ~7 == 0 else { throw .malformed("reserved item record flags set") }
        isDeleted = flags & 1 != 0
        hasConflict = flags & 2 != 0
        policy = flags & 4 != 0 ? .localOnly : .sync
        updatedAt = try r.i64()
        func text() throws(FormatError) -> String {
            let bytes = try r.blob16()
            // ASCII is valid UTF-8: skip the generic validation (a third
            // of a 10,000-item listing's decoding, docs/benchmarks-cli.md).
            if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            guard let s = String(validating: bytes, as: UTF8.self) else { throw .malformed("item record text is not UTF-8") }
            return s
        }
        func optional() throws(FormatError) -> String? {
            let present = try r.u8()
            let s = try text()
            return present == 1 ? s : nil
        }
        name = try text()
        type = try text()
        let t = try text()
        tags = t.isEmpty ? [] : t.split(separator: "\n").map(String.init)
        source = try optional()
        expires = try optional()
        username = try optional()
        url = try optional()
        let hasLast = try r.u8()
        let last = try r.identifier()
        lastReplica = hasLast == 1 ? last : nil
        guard withVersions else {
            versionsDigest = []
            return
        }
        if version == Self.formatVersion {
            versionsDigest = try r.bytes(32)
        } else {
            let n = Int(try r.u32())
            guard n <= r.remaining / Self.refBytes else { throw .malformed("item record version count exceeds its length") }
            var refs: [RawRef] = []
            refs.reserveCapacity(n)
            for _ in 0..<n {
                let rid = try r.registerID()
                let replica = try r.identifier()
                let counter = try r.u64()
                refs.append(RawRef(register: rid, dot: Dot(replica: replica, counter: counter), tag: try r.bytes(16)))
            }
            versionsDigest = Self.digest(of: refs)
        }
        while !r.isAtEnd {
            guard try r.u8() == 0 else { throw .malformed("item record padding is not zero") }
        }
    }
}

extension ItemRecord {
    /// What a record holds besides the row's flags, gathered register by
    /// register: the listed texts of the shown versions, every current
    /// version's reference, the newest write. ``Vault/sealRecord(state:row:shown:sealer:)``
    /// fills it from an item's state; a bulk import fills it while it
    /// opens the payloads (`Vault.prepareNew`). The record is encoded
    /// straight from the payloads' bytes (no strings): the same bytes as
    /// ``ItemRecord/encoded`` of the record the texts decode to (a test
    /// compares both with the reference code).
    struct Content {
        /// Which text of the record a register's shown payload gives.
        enum Listed {
            case name, type, tags, source, expires, username, url

            /// The text a metadata register gives, nil for one that is
            /// not listed.
            init?(metadata rid: RegisterID) {
                if rid == .name {
                    self = .name
                } else if rid == .type {
                    self = .type
                } else if rid == .tags {
                    self = .tags
                } else if rid == .source {
                    self = .source
                } else if rid == .expires {
                    self = .expires
                } else {
                    return nil
                }
            }

            /// The text a user field of this name gives (`username`, `url`).
            init?(field name: String) {
                if name == "username" { self = .username } else if name == "url" { self = .url } else { return nil }
            }
        }

        var name: [UInt8]?, type: [UInt8]?, tags: [UInt8]?, source: [UInt8]?, expires: [UInt8]?
        var username: [UInt8]?, url: [UInt8]?
        var refs: [RawRef] = []
        var newest: (writtenAt: Int64, dot: Dot)?

        /// A current version of register `rid`.
        mutating func add(_ v: FieldVersion, register rid: RegisterID) {
            if newest == nil || (v.writtenAt, v.dot) > newest! { newest = (v.writtenAt, v.dot) }
            refs.append(RawRef(register: rid, dot: v.dot, payload: v.payload))
        }

        /// The shown, live payload of a listed register. A field the user
        /// marked secret stays out of listings.
        mutating func list(_ field: Listed, _ p: FieldPayload) {
            let text = p.isSecret ? nil : ItemRecord.storedText(p.value)
            switch field {
            case .name: name = text
            case .type: type = text
            case .tags: tags = text
            case .source: source = text
            case .expires: expires = text
            case .username: username = text
            case .url: url = text
            }
        }

        /// The padded plaintext of the record for `row`.
        func plaintext(row: ItemRow) -> [UInt8] {
            let texts = Texts(
                name: name ?? [], type: type ?? Array(ItemType.custom.rawValue.utf8), tags: ItemRecord.storedTags(tags ?? []),
                source: source, expires: expires, username: username, url: url)
            return ItemRecord.encode(
                texts: texts, policy: row.policy, isDeleted: row.isDeleted, hasConflict: row.hasConflict, updatedAt: row.updatedAt,
                lastReplica: newest?.dot.replica, versions: refs)
        }
    }
}

extension VaultCore {
    // MARK: Item records

    /// Builds and seals the record of `state` as stored in `row`. `shown`
    /// gives the shown, non-tombstone payload of a register when the
    /// caller already decrypted it; others are decrypted here.
    package func sealRecord(
        state: ItemState, row: ItemRow, shown known: [RegisterID: FieldPayload] = [:], sealer: AEAD.BatchSealer? = nil
    ) throws -> [UInt8] {
        listingWrites.touch(row.id)
        let username = registerID(field: "username", item: state.id)
        let url = registerID(field: "url", item: state.id)
        var content = ItemRecord.Content()
        content.refs.reserveCapacity(state.registers.count + 2)
        for (rid, list) in state.registers {
            for v in list { content.add(v, register: rid) }
            let field: ItemRecord.Content.Listed? =
                rid.isMetadata ? ItemRecord.Content.Listed(metadata: rid) : (rid == username ? .username : rid == url ? .url : nil)
            guard let field, let shown: FieldVersion = list.count == 1 ? list[0] : Register.shown(list), !shown.isTombstone else { continue }
            content.list(field, try known[rid] ?? open(shown, item: state.id, register: rid))
        }
        return seal(content, row: row, sealer: sealer)
    }

    /// Seals the record gathered in `content` for `row`.
    func seal(_ content: ItemRecord.Content, row: ItemRow, sealer: AEAD.BatchSealer? = nil) -> [UInt8] {
        let plain = content.plaintext(row: row)
        let ad = ItemRecord.associatedData(vault: vaultID, item: row.id)
        if let sealer { return sealer.seal(plain, associatedData: ad) }
        return AEAD.seal(plain, key: keys.record, associatedData: ad)
    }

    /// Opens a sealed record; a missing or unauthentic one is `damaged`.
    func openRecord(_ sealed: [UInt8]?, item: ItemID, withVersions: Bool = true) throws -> ItemRecord {
        guard let sealed else {
            throw StoreError.damaged("item \(item.hex.prefix(8)) has no integrity record")
        }
        let plain: [UInt8]
        do { plain = try AEAD.open(sealed, key: keys.record, associatedData: ItemRecord.associatedData(vault: vaultID, item: item)) } catch {
            if let locked = keys.lockedError { throw locked }
            throw StoreError.damaged("the integrity record of item \(item.hex.prefix(8)) fails authentication (changed, or moved from another item)")
        }
        do { return try ItemRecord(decoding: plain, withVersions: withVersions) } catch {
            throw StoreError.damaged("the integrity record of item \(item.hex.prefix(8)) is malformed")
        }
    }

    /// Checks the clear columns of `row` against the record (cheap: no
    /// field version is read).
    func check(_ record: ItemRecord, row: ItemRow) throws {
        var id: Substring { row.id.hex.prefix(8) }
        guard record.policy == row.policy else { throw StoreError.damaged("the sync policy of item \(id) was changed") }
        guard record.isDeleted == row.isDeleted else { throw StoreError.damaged("the deleted flag of item \(id) was changed") }
        guard record.hasConflict == row.hasConflict else { throw StoreError.damaged("the conflict flag of item \(id) was changed") }
    }

    /// Checks an item's row and current versions against its record.
    func check(_ record: ItemRecord, row: ItemRow, state: ItemState) throws {
        try check(record, row: row)
        guard record.versionsDigest == ItemRecord.digest(of: state) else {
            throw StoreError.damaged(
                "the current versions of item \(row.id.hex.prefix(8)) differ from its integrity record (a version was added, removed, replaced or moved from history)"
            )
        }
    }

    /// An item's row, state and record, all checked against each other.
    /// Every read of an item's fields goes through here.
    package func loadItem(_ db: StoreConnection, id: ItemID) throws -> (row: ItemRow, state: ItemState, record: ItemRecord)? {
        try loadItem(ReadConnection(db), id: id)
    }

    /// The same in any read (the read verbs' direct one).
    package func loadItem(_ db: ReadConnection, id: ItemID) throws -> (row: ItemRow, state: ItemState, record: ItemRecord)? {
        guard let row = try Queries.cachedItemRow(db, id: id) else { return nil }
        let state = try Queries.cachedItemState(db, id: id)
        let record = try openRecord(try Queries.itemRecord(db, id: id), item: id)
        try check(record, row: row, state: state)
        return (row, state, record)
    }
}
