import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// The bulk paths write item records and vault-MAC terms straight into
/// memory (no strings, no intermediate arrays). Every byte must be what
/// docs/key-hierarchy.md says: these tests compare against reference code
/// written from it (ByteWriter and Strings; the format-5 code for what
/// did not change), over items with every kind of text
/// the record normalises (non-ASCII, invalid UTF-8, empty tags, CR LF),
/// secret and deleted fields, conflicts and short payloads.
@Suite("integrity encodings (bulk paths against the reference)")
struct IntegrityEncodingTests {
    // MARK: The reference code

    /// A current version as records list (format 1) or digest (format 2)
    /// it: register, dot, the payload's last 16 bytes.
    struct Ref: Comparable {
        var register: RegisterID
        var dot: Dot
        var tag: [UInt8]
        static func < (a: Ref, b: Ref) -> Bool { (a.register, a.dot) < (b.register, b.dot) }
    }

    static func refs(of state: ItemState) -> [Ref] {
        var out: [Ref] = []
        for (rid, versions) in state.registers {
            for v in versions { out.append(Ref(register: rid, dot: v.dot, tag: Array(v.payload.suffix(16)))) }
        }
        return out.sorted()
    }

    static func refList(_ refs: [Ref]) -> [UInt8] {
        var w = ByteWriter(capacity: 4 + refs.count * 56)
        w.u32(UInt32(refs.count))
        for v in refs.sorted() {
            w.id(v.register)
            w.id(v.dot.replica)
            w.u64(v.dot.counter)
            w.bytes(v.tag.count == 16 ? v.tag : v.tag + [UInt8](repeating: 0, count: 16 - v.tag.count))
        }
        return w.data
    }

    /// A format-2 record (vault format 6): the versions' digest.
    static func referenceRecord(_ r: ItemRecord, refs: [Ref]) -> [UInt8] {
        referenceRecord(r, version: 2, versions: KeyedHash.digest(refList(refs)))
    }

    /// A format-1 record (vault formats 2 to 5): the versions' list.
    static func referenceFormat1Record(_ r: ItemRecord, refs: [Ref]) -> [UInt8] {
        referenceRecord(r, version: 1, versions: refList(refs))
    }

    static func referenceRecord(_ r: ItemRecord, version: UInt8, versions: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.u8(version)
        w.u8((r.isDeleted ? 1 : 0) | (r.hasConflict ? 2 : 0) | (r.policy == .localOnly ? 4 : 0))
        w.i64(r.updatedAt)
        w.blob16(Array(r.name.utf8))
        w.blob16(Array(r.type.utf8))
        w.blob16(Array(r.tags.joined(separator: "\n").utf8))
        for text in [r.source, r.expires, r.username, r.url] {
            w.u8(text == nil ? 0 : 1)
            w.blob16(Array((text ?? "").utf8))
        }
        w.u8(r.lastReplica == nil ? 0 : 1)
        w.id(r.lastReplica ?? ReplicaID(bytes: [UInt8](repeating: 0, count: 16))!)
        w.bytes(versions)
        var out = w.data
        let padded = (out.count / 128 + 1) * 128
        out.append(contentsOf: [UInt8](repeating: 0, count: padded - out.count))
        return out
    }

    /// The record the format-5 `sealRecord` built (texts through `String`).
    static func referenceRecord(_ v: Vault, state: ItemState, row: ItemRow) throws -> ItemRecord {
        func text(_ register: RegisterID?) throws -> String? {
            guard let rid = register, let ver = Register.shown(state.registers[rid] ?? []), !ver.isTombstone else { return nil }
            let p = try v.open(ver, item: state.id, register: rid)
            return p.isSecret ? nil : p.text
        }
        var newest: FieldVersion?
        for versions in state.registers.values {
            for ver in versions where newest == nil || (ver.writtenAt, ver.dot) > (newest!.writtenAt, newest!.dot) { newest = ver }
        }
        return ItemRecord(
            name: try text(.name) ?? "", type: try text(.type) ?? ItemType.custom.rawValue,
            tags: (try text(.tags))?.split(separator: "\n").map(String.init) ?? [], source: try text(.source),
            expires: try text(.expires), username: try text(v.registerID(field: "username", item: state.id)),
            url: try text(v.registerID(field: "url", item: state.id)), policy: row.policy,
            isDeleted: row.isDeleted, hasConflict: row.hasConflict, updatedAt: row.updatedAt,
            lastReplica: newest?.dot.replica, versionsDigest: KeyedHash.digest(refList(refs(of: state))))
    }

    /// Format 6: the row, the record's length and tag, and every current
    /// version (by register id, then dot), as docs/key-hierarchy.md lists
    /// them.
    static func referenceItemTerm(_ row: ItemRow, record: [UInt8], state: ItemState) -> [UInt8] {
        var w = ByteWriter(capacity: 100)
        referenceRow(row, into: &w)
        w.u32(UInt32(record.count))
        w.bytes(record.suffix(16))
        var versions: [(RegisterID, FieldVersion)] = []
        for (rid, list) in state.registers { for v in list { versions.append((rid, v)) } }
        versions.sort { (a: (RegisterID, FieldVersion), b: (RegisterID, FieldVersion)) -> Bool in
            if a.0 != b.0 { return a.0 < b.0 }
            return a.1.dot < b.1.dot
        }
        w.u32(UInt32(versions.count))
        for (rid, v) in versions {
            w.id(rid)
            w.id(v.dot.replica)
            w.u64(v.dot.counter)
            w.blob32(v.vector.encoded)
            w.i64(v.writtenAt)
            w.u8(v.isTombstone ? 1 : 0)
            w.u32(UInt32(clamping: v.payload.count))
            w.bytes(v.payload.suffix(16))
        }
        return w.data
    }

    /// Formats 2 to 5 (kept for the upgrade): the row and the whole record.
    static func referenceFormat5ItemTerm(_ row: ItemRow, record: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 100 + record.count)
        referenceRow(row, into: &w)
        w.blob32(record)
        return w.data
    }

    static func referenceRow(_ row: ItemRow, into w: inout ByteWriter) {
        w.u8(UInt8(ascii: "I"))
        w.id(row.id)
        w.blob16(Array(row.policy.rawValue.utf8))
        w.blob16(row.nameHash ?? [])
        w.u8(row.nameHash == nil ? 0 : 1)
        w.u8(row.isDeleted ? 1 : 0)
        w.u8(row.hasConflict ? 1 : 0)
        w.i64(row.createdAt)
        w.i64(row.updatedAt)
    }

    static func referenceVersionTerm(tag: Unicode.Scalar, item: ItemID, register: RegisterID, _ v: FieldVersion, supersededAt: Int64?) -> [UInt8] {
        let vector = v.vector.encoded
        var w = ByteWriter(capacity: 110 + vector.count)
        w.u8(UInt8(ascii: tag))
        w.id(item)
        w.id(register)
        w.id(v.dot.replica)
        w.u64(v.dot.counter)
        w.blob32(vector)
        w.i64(v.writtenAt)
        w.u8(v.isTombstone ? 1 : 0)
        w.u32(UInt32(clamping: v.payload.count))
        w.bytes(v.payload.suffix(16))
        if let supersededAt { w.i64(supersededAt) }
        return w.data
    }

    // MARK: Items of every shape

    func payload(_ name: String, _ value: [UInt8], secret: Bool = false) -> FieldPayload {
        FieldPayload(name: name, value: value, isSecret: secret)
    }

    /// (name, tags, username, url, source, secret username?, tombstoned url?)
    static let shapes: [(name: [UInt8], tags: [UInt8]?, username: [UInt8]?, url: [UInt8]?, source: [UInt8]?, secretUser: Bool, deadURL: Bool)] = [
        (Array("plain/ascii".utf8), Array("a\nb".utf8), Array("me".utf8), Array("https://example.com/a/long/path".utf8), Array("github".utf8), false, false),
        (Array("café/東京 🔑".utf8), Array("\nx\n\ny\n".utf8), Array("jörg".utf8), nil, nil, false, false),
        ([0xff, 0x41, 0xc3], Array("a\r\nb\r\n".utf8), [0x80], Array("u".utf8), [0xfe], false, true),
        (Array("".utf8), Array("".utf8), Array("secret-user".utf8), nil, Array("s\n".utf8), true, false),
        (Array("only-name".utf8), nil, nil, nil, nil, false, false),
        (Array("tags/crlf".utf8), Array("\r\n\r\nz".utf8), nil, Array("x".utf8), nil, false, false),
    ]

    /// An item state and row of shape `i`: a first write, then (for odd
    /// shapes) a concurrent write of the name from another replica (a
    /// conflict) and a tombstoned url.
    func item(_ v: Vault, shape i: Int, policy: SyncPolicy = .sync, deleted: Bool = false) throws -> (ItemState, ItemRow) {
        let s = Self.shapes[i]
        let id = ItemID.random()
        var changes = [Vault.Change(register: .name, payload: payload("@name", s.name), tombstone: false)]
        if i != 4 { changes.append(.init(register: .type, payload: payload("@type", Array("login".utf8)), tombstone: false)) }
        if let t = s.tags { changes.append(.init(register: .tags, payload: payload("@tags", t), tombstone: false)) }
        if let src = s.source { changes.append(.init(register: .source, payload: payload("@source", src), tombstone: false)) }
        if let u = s.username {
            changes.append(.init(register: v.registerID(field: "username", item: id), payload: payload("username", u, secret: s.secretUser), tombstone: false))
        }
        if let u = s.url {
            changes.append(.init(register: v.registerID(field: "url", item: id), payload: payload("url", u), tombstone: false))
        }
        changes.append(
            .init(register: v.registerID(field: "password", item: id), payload: payload("password", Array("pw".utf8), secret: true), tombstone: false))
        var state = ItemState(id: id)
        v.apply(changes, to: &state, dot: Dot(replica: ReplicaID.random(), counter: 3), at: 1_700_000_000_000)
        if s.deadURL {
            v.apply(
                [.init(register: v.registerID(field: "url", item: id), payload: payload("url", []), tombstone: true)], to: &state,
                dot: Dot(replica: ReplicaID.random(), counter: 9), at: 1_700_000_000_500)
        }
        if i % 2 == 1 {
            var other = ItemState(id: id)
            v.apply(
                [.init(register: .name, payload: payload("@name", Array("other".utf8)), tombstone: false)], to: &other,
                dot: Dot(replica: ReplicaID.random(), counter: 1), at: 1_700_000_000_100)
            state.registers[.name]! += other.registers[.name]!
        }
        if deleted {
            v.apply(
                [.init(register: .deleted, payload: payload("@deleted", []), tombstone: false)], to: &state, dot: Dot(replica: ReplicaID.random(), counter: 12),
                at: 1_700_000_001_000)
        }
        let row = try v.derivedRow(for: state, policy: policy, createdAt: 1_700_000_000_000, updatedAt: 1_700_000_001_000)
        return (state, row)
    }

    // MARK: Tests

    @Test func recordsAreTheBytesOfTheReference() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let sealer = AEAD.BatchSealer(key: v.keys.record)
        for i in Self.shapes.indices {
            for (policy, deleted) in [(SyncPolicy.sync, false), (.localOnly, false), (.sync, true)] {
                let (state, row) = try item(v, shape: i, policy: policy, deleted: deleted)
                let reference = try Self.referenceRecord(v, state: state, row: row)
                let expected = Self.referenceRecord(reference, refs: Self.refs(of: state))
                let ad = ItemRecord.associatedData(vault: v.vaultID, item: state.id)
                // The listing-record path (fields found by derivation),
                // the import path (batch sealer) and `encoded` itself.
                let sealed = try v.sealRecord(state: state, row: row)
                #expect(try AEAD.open(sealed, key: v.keys.record, associatedData: ad) == expected, "shape \(i)")
                let batch = try v.sealRecord(state: state, row: row, sealer: sealer)
                #expect(try AEAD.open(batch, key: v.keys.record, associatedData: ad) == expected, "shape \(i), batch sealer")
                let record = try v.openRecord(sealed, item: state.id)
                #expect(record.encoded == expected, "shape \(i), re-encoded")
                #expect(record.versionsDigest == ItemRecord.digest(of: state))
                // A format-1 record (vault formats 2 to 5, kept until the
                // item's next write) reads as the same record.
                let format1 = Self.referenceFormat1Record(reference, refs: Self.refs(of: state))
                #expect(try ItemRecord(decoding: format1) == record, "shape \(i), format 1")
                #expect(try v.openRecord(AEAD.seal(format1, key: v.keys.record, associatedData: ad), item: state.id) == record)
                if i == 0 { #expect(record.username == "me" && record.tags == ["a", "b"]) }
                if i == 1 { #expect(record.tags == ["x", "y"] && record.hasConflict) }
                // Shape 3: the later, concurrent name is shown; the secret username is left out.
                if i == 3 { #expect(record.username == nil && record.name == "other") }
            }
        }
    }

    /// The bulk import gathers each record while it opens the payloads
    /// (`prepareNew`): the same plaintext as `sealRecord` of the state it
    /// stores, for items of every shape a bundle may hold (values are
    /// UTF-8 in bundles: rule text-value).
    @Test func theImportPathSealsTheSameRecords() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let sealer = AEAD.BatchSealer(key: v.keys.record)
        func utf8(_ b: [UInt8]?) -> Bool { b.map { String(validating: $0, as: UTF8.self) != nil } ?? true }
        for i in Self.shapes.indices {
            let s = Self.shapes[i]
            guard [s.name, s.tags, s.username, s.url, s.source].allSatisfy(utf8) else { continue }
            let (state, _) = try item(v, shape: i)
            let new = try v.replication.prepareNew(state, path: "bundle.cb", sealer: sealer)
            let ad = ItemRecord.associatedData(vault: v.vaultID, item: state.id)
            let imported = try AEAD.open(new.record, key: v.keys.record, associatedData: ad)
            let reference = Self.referenceRecord(try Self.referenceRecord(v, state: new.state, row: new.row), refs: Self.refs(of: new.state))
            #expect(imported == reference, "shape \(i)")
            #expect(try AEAD.open(try v.sealRecord(state: new.state, row: new.row), key: v.keys.record, associatedData: ad) == imported)
        }
    }

    @Test func versionsWithShortPayloadsKeepTheReferenceRecord() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let (state, row) = try item(v, shape: 0)
        var short = state
        // A malformed (short) payload: its bytes and zeros stand for it.
        let rid = v.registerID(field: "password", item: state.id)
        var ver = short.registers[rid]![0]
        ver.payload = [1, 2, 3, 4, 5]
        short.registers[rid] = [ver]
        let record = ItemRecord(
            name: "n", type: "login", tags: [], source: nil, expires: nil, username: nil, url: nil, policy: row.policy,
            isDeleted: false, hasConflict: false, updatedAt: 1, lastReplica: nil, versionsDigest: ItemRecord.digest(of: short))
        #expect(record.encoded == Self.referenceRecord(record, refs: Self.refs(of: short)))
        #expect(try ItemRecord(decoding: Self.referenceFormat1Record(record, refs: Self.refs(of: short))) == record)
    }

    @Test func termsAreTheBytesOfTheReference() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let key = SecretBytes(copying: Random.bytes(32))
        for i in Self.shapes.indices {
            let (state, row0) = try item(v, shape: i, policy: i % 2 == 0 ? .sync : .localOnly, deleted: i == 2)
            var row = row0
            if i == 3 { row.nameHash = nil }
            let record = try v.sealRecord(state: state, row: row)
            var cut = state
            if i == 4 {
                // Malformed (short) payloads: their bytes stand for their tags.
                for (rid, list) in cut.registers {
                    cut.registers[rid] = list.map {
                        var x = $0
                        x.payload = Array(x.payload.prefix(7))
                        return x
                    }
                }
            }
            #expect(IntegrityTerm.item(row, record: record, state: cut) == Self.referenceItemTerm(row, record: record, state: cut))
            #expect(IntegrityTerm.item(row, record: [], state: cut) == Self.referenceItemTerm(row, record: [], state: cut))
            #expect(IntegrityTerm.format5Item(row, record: record) == Self.referenceFormat5ItemTerm(row, record: record))
            let bulk = VaultMAC(key: key)
            let single = VaultMAC(key: key)
            bulk.toggleItem(row, record: record, state: cut)
            single.toggle(Self.referenceItemTerm(row, record: record, state: cut))
            for (rid, list) in cut.registers {
                for ver in list {
                    #expect(
                        IntegrityTerm.format5Version(item: state.id, register: rid, ver)
                            == Self.referenceVersionTerm(tag: "V", item: state.id, register: rid, ver, supersededAt: nil))
                    #expect(
                        IntegrityTerm.history(item: state.id, register: rid, ver, supersededAt: -5)
                            == Self.referenceVersionTerm(tag: "S", item: state.id, register: rid, ver, supersededAt: -5))
                }
            }
            #expect(bulk.delta == single.delta && bulk.areaDelta == single.areaDelta)
            #expect(!bulk.isZero)
            #expect(bulk.area(.versions) == [UInt8](repeating: 0, count: 32), "format 6 writes no version terms")
        }
        // A term longer than the reused buffer (an item of 12 versions)
        // grows it; the versions' order in the state does not matter.
        let (state, row) = try item(v, shape: 0)
        let one = try #require(state.registers.values.first?.first)
        var many = ItemState(id: state.id)
        for _ in 0..<12 { many.registers[RegisterID(bytes: Random.bytes(16))!] = [one] }
        let record = try v.sealRecord(state: state, row: row)
        let a = VaultMAC(key: key)
        let b = VaultMAC(key: key)
        a.toggleItem(row, record: record, state: many)
        a.toggleItem(row, record: record, state: state)
        b.toggle(Self.referenceItemTerm(row, record: record, state: many))
        b.toggle(Self.referenceItemTerm(row, record: record, state: state))
        #expect(a.delta == b.delta && a.areaDelta == b.areaDelta)
        #expect(Self.referenceItemTerm(row, record: record, state: many).count > 1024)
    }

    @Test func aListedTextOver64KiBIsCutAtACharacter() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        // 65,534 ASCII bytes, then "é" (2 bytes) straddling byte 65,535.
        let url = "https://x/" + String(repeating: "a", count: 65_524) + "é" + String(repeating: "b", count: 5_000)
        try v.add(
            ItemDraft(
                name: "site", type: .login, fields: [Field(name: "url", value: url, isSecret: false), Field(name: "username", value: "me", isSecret: false)]))
        let listed = try #require(try v.list().first)
        #expect(listed.url == "https://x/" + String(repeating: "a", count: 65_524))
        #expect(listed.username == "me")
        #expect(try v.item(named: "site").fields.first { $0.name == "url" }?.value == url)
        #expect(try v.verify().isSound)
        #expect(ItemRecord.fitted(Array("short".utf8)) == Array("short".utf8))
        #expect(ItemRecord.fitted([UInt8](repeating: 0x41, count: 70_000)).count == 65_535)
    }
}
