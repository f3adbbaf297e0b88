import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import GRDB

/// One item's integrity record (docs/key-hierarchy.md, "Item records"):
/// what a listing shows, and the dot and authentication tag of every
/// current version, sealed under the record key and bound to the vault id
/// and item id. Everything in the clear that decides what a read prints or
/// what an export carries — the sync policy, the deleted flag, which
/// versions are current — is checked against it on every read of the item.
package struct ItemRecord: Equatable {
    /// A current version: its register, dot and the last 16 bytes of its
    /// payload (the Poly1305 tag, which authenticates the version's
    /// ciphertext and associated data under the item key).
    struct VersionRef: Hashable, Comparable {
        var register: RegisterID
        var dot: Dot
        var tag: [UInt8]

        static func < (a: VersionRef, b: VersionRef) -> Bool {
            (a.register, a.dot) < (b.register, b.dot)
        }
    }

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
    var versions: [VersionRef]

    static let formatVersion: UInt8 = 1
    /// Plaintexts are padded to a multiple of this many bytes, so a
    /// record's size does not give its name's exact length.
    static let padBlock = 128

    static func refs(of state: ItemState) -> [VersionRef] {
        var out: [VersionRef] = []
        for (rid, versions) in state.registers {
            for v in versions { out.append(VersionRef(register: rid, dot: v.dot, tag: Array(v.payload.suffix(16)))) }
        }
        return out.sorted()
    }

    static func associatedData(vault: VaultID, item: ItemID) -> [UInt8] {
        var w = ByteWriter(capacity: 48)
        w.bytes(Array("coffer-item-record-v1".utf8))
        w.id(vault)
        w.id(item)
        return w.data
    }

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 256 + versions.count * 56)
        w.u8(Self.formatVersion)
        w.u8((isDeleted ? 1 : 0) | (hasConflict ? 2 : 0) | (policy == .localOnly ? 4 : 0))
        w.i64(updatedAt)
        w.blob16(Array(name.utf8))
        w.blob16(Array(type.utf8))
        w.blob16(Array(tags.joined(separator: "\n").utf8))
        for text in [source, expires, username, url] {
            w.u8(text == nil ? 0 : 1)
            w.blob16(Array((text ?? "").utf8))
        }
        w.u8(lastReplica == nil ? 0 : 1)
        w.id(lastReplica ?? ReplicaID(bytes: [UInt8](repeating: 0, count: 16))!)
        w.u32(UInt32(versions.count))
        for v in versions {
            w.id(v.register)
            w.id(v.dot.replica)
            w.u64(v.dot.counter)
            w.bytes(v.tag.count == 16 ? v.tag : v.tag + [UInt8](repeating: 0, count: 16 - v.tag.count))
        }
        var out = w.data
        let padded = (out.count / Self.padBlock + 1) * Self.padBlock
        out.append(contentsOf: [UInt8](repeating: 0, count: padded - out.count))
        return out
    }

    init(
        name: String, type: String, tags: [String], source: String?, expires: String?, username: String?, url: String?,
        policy: SyncPolicy, isDeleted: Bool, hasConflict: Bool, updatedAt: Int64, lastReplica: ReplicaID?, versions: [VersionRef]
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
        self.versions = versions
    }

    /// `withVersions: false` (listings) stops after the listed fields and
    /// leaves ``versions`` empty: a listing never compares versions.
    init(decoding bytes: [UInt8], withVersions: Bool = true) throws(FormatError) {
        var r = ByteReader(bytes)
        guard try r.u8() == Self.formatVersion else { throw .malformed("unknown item record version") }
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
            versions = []
            return
        }
        let n = Int(try r.u32())
        guard n <= r.remaining / 56 else { throw .malformed("item record version count exceeds its length") }
        var refs: [VersionRef] = []
        refs.reserveCapacity(n)
        for _ in 0..<n {
            let rid = try r.registerID()
            let replica = try r.identifier()
            let counter = try r.u64()
            refs.append(VersionRef(register: rid, dot: Dot(replica: replica, counter: counter), tag: try r.bytes(16)))
        }
        versions = refs
        while !r.isAtEnd {
            guard try r.u8() == 0 else { throw .malformed("item record padding is not zero") }
        }
    }
}

extension Vault {
    // MARK: Item records

    /// Builds and seals the record of `state` as stored in `row`. `shown`
    /// gives the shown, non-tombstone payload of a register when the
    /// caller already decrypted it; others are decrypted here.
    /// `fieldRegisters`, when given, are the registers of the `username`
    /// and `url` fields (nil: the item has none), found by the caller
    /// (an import, from payloads already checked against their registers);
    /// otherwise they are derived here.
    package func sealRecord(
        state: ItemState, row: ItemRow, shown known: [RegisterID: FieldPayload] = [:],
        fieldRegisters: (username: RegisterID?, url: RegisterID?)? = nil
    ) throws -> [UInt8] {
        let username = fieldRegisters.map(\.username) ?? registerID(field: "username", item: state.id)
        let url = fieldRegisters.map(\.url) ?? registerID(field: "url", item: state.id)
        func text(_ register: RegisterID?) throws -> String? {
            guard let rid = register, let v = Register.shown(state.registers[rid] ?? []), !v.isTombstone else { return nil }
            let p = try known[rid] ?? open(v, item: state.id, register: rid)
            // A field the user marked secret stays out of listings.
            return p.isSecret ? nil : p.text
        }
        var newest: FieldVersion?
        for versions in state.registers.values {
            for v in versions where newest == nil || (v.writtenAt, v.dot) > (newest!.writtenAt, newest!.dot) { newest = v }
        }
        let record = ItemRecord(
            name: try text(.name) ?? "", type: try text(.type) ?? ItemType.custom.rawValue,
            tags: (try text(.tags))?.split(separator: "\n").map(String.init) ?? [], source: try text(.source),
            expires: try text(.expires), username: try text(username), url: try text(url), policy: row.policy,
            isDeleted: row.isDeleted, hasConflict: row.hasConflict, updatedAt: row.updatedAt,
            lastReplica: newest?.dot.replica, versions: ItemRecord.refs(of: state))
        return AEAD.seal(record.encoded, key: keys.record, associatedData: ItemRecord.associatedData(vault: vaultID, item: state.id))
    }

    /// Opens a sealed record; a missing or unauthentic one is `damaged`.
    func openRecord(_ sealed: [UInt8]?, item: ItemID, withVersions: Bool = true) throws -> ItemRecord {
        guard let sealed else {
            throw StoreError.damaged("item \(item.hex.prefix(8)) has no integrity record")
        }
        let plain: [UInt8]
        do { plain = try AEAD.open(sealed, key: keys.record, associatedData: ItemRecord.associatedData(vault: vaultID, item: item)) } catch {
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
        guard record.versions == ItemRecord.refs(of: state) else {
            throw StoreError.damaged(
                "the current versions of item \(row.id.hex.prefix(8)) differ from its integrity record (a version was added, removed, replaced or moved from history)")
        }
    }

    /// An item's row, state and record, all checked against each other.
    /// Every read of an item's fields goes through here.
    package func loadItem(_ db: Database, id: ItemID) throws -> (row: ItemRow, state: ItemState, record: ItemRecord)? {
        guard let row = try Queries.cachedItemRow(db, id: id) else { return nil }
        let state = try Queries.cachedItemState(db, id: id)
        let record = try openRecord(try Queries.itemRecord(db, id: id), item: id)
        try check(record, row: row, state: state)
        return (row, state, record)
    }
}
