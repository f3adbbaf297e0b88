import CofferCrypto
import CofferSync
import Foundation
import GRDB

/// The vault-wide MAC (docs/key-hierarchy.md, "Vault MAC"): the XOR of one
/// keyed BLAKE2b-256 per covered row — the header, the local replica, each
/// replica of the summary, each item row with its sealed record, each
/// current version and each history version. A write toggles out the
/// terms of the rows it replaces and toggles in the new ones, so keeping
/// the MAC costs O(rows written), not O(vault); checking it (`verify`,
/// `export`, `import`, `sync`) reads every row once.
///
/// One accumulator per write transaction, used by one thread at a time;
/// ``Queries/commitMAC(_:_:)`` folds it into the stored MAC before commit.
public final class VaultMAC: @unchecked Sendable {
    public static let length = 32
    let key: SecretBytes
    let hasher: PreparedKeyedHash
    public private(set) var delta = [UInt8](repeating: 0, count: VaultMAC.length)

    /// `key` is the vault-MAC sub-key of the master key.
    public convenience init(key: SecretBytes) { self.init(key: key, hasher: PreparedKeyedHash(key: key, length: Self.length)) }

    init(key: SecretBytes, hasher: PreparedKeyedHash) {
        self.key = key
        self.hasher = hasher
    }

    /// XORs in (or out: the same operation) the term of one row.
    public func toggle(_ message: [UInt8]) {
        let h = hasher.hash(message)
        for i in 0..<Self.length { delta[i] ^= h[i] }
    }

    /// XORs in what another accumulator collected (a second thread's).
    public func absorb(_ other: VaultMAC) {
        for i in 0..<Self.length { delta[i] ^= other.delta[i] }
    }

    public var isZero: Bool { delta.allSatisfy { $0 == 0 } }

    /// Runs `body` with the key kept readable (bulk work: no `mprotect`
    /// pair per term).
    public func keepingReadable<R>(_ body: () throws -> R) rethrows -> R {
        try key.keepingReadable(body)
    }

    /// A new accumulator under the same key.
    public func sibling() -> VaultMAC { VaultMAC(key: key) }
}

/// The message hashed for each covered row. Every field has a fixed
/// length or a length prefix, and a one-byte tag separates the kinds.
public enum IntegrityTerm {
    public static func header(_ h: VaultHeader) -> [UInt8] {
        var w = ByteWriter(capacity: 160)
        w.u8(UInt8(ascii: "H"))
        w.id(h.vaultID)
        w.i64(Int64(h.formatVersion))
        w.u32(h.kdfMemoryKiB)
        w.u32(h.kdfIterations)
        w.u32(h.kdfParallelism)
        w.blob16(h.kdfSalt)
        w.blob16(h.wrappedMasterKey)
        w.i64(h.createdAt)
        return w.data
    }

    public static func local(_ id: ReplicaID, counter: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 25)
        w.u8(UInt8(ascii: "L"))
        w.id(id)
        w.u64(counter)
        return w.data
    }

    public static func replica(_ id: ReplicaID, counter: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 25)
        w.u8(UInt8(ascii: "R"))
        w.id(id)
        w.u64(counter)
        return w.data
    }

    public static func item(_ row: ItemRow, record: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 100 + record.count)
        w.u8(UInt8(ascii: "I"))
        w.id(row.id)
        w.blob16(Array(row.policy.rawValue.utf8))
        w.blob16(row.nameHash ?? [])
        w.u8(row.nameHash == nil ? 0 : 1)
        w.u8(row.isDeleted ? 1 : 0)
        w.u8(row.hasConflict ? 1 : 0)
        w.i64(row.createdAt)
        w.i64(row.updatedAt)
        w.blob32(record)
        return w.data
    }

    public static func version(item: ItemID, register: RegisterID, _ v: FieldVersion) -> [UInt8] {
        version(tag: "V", item: item, register: register, v, supersededAt: nil)
    }

    public static func history(item: ItemID, register: RegisterID, _ v: FieldVersion, supersededAt: Int64) -> [UInt8] {
        version(tag: "S", item: item, register: register, v, supersededAt: supersededAt)
    }

    static func version(tag: Unicode.Scalar, item: ItemID, register: RegisterID, _ v: FieldVersion, supersededAt: Int64?) -> [UInt8] {
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
        // The payload's Poly1305 tag (its last 16 bytes) stands for the
        // payload: it authenticates the ciphertext and its associated data
        // under the item key, and no one without the key finds another
        // payload with the same tag. Hashing 16 bytes instead of the whole
        // payload keeps bulk imports cheap.
        w.u32(UInt32(clamping: v.payload.count))
        w.bytes(v.payload.suffix(16))
        if let supersededAt { w.i64(supersededAt) }
        return w.data
    }
}

extension Queries {
    // MARK: Item records

    /// The sealed integrity record of an item, nil when it has none.
    public static func itemRecord(_ db: Database, id: ItemID) throws -> [UInt8]? {
        let stmt = try db.cachedStatement(sql: "SELECT record FROM itemRecord WHERE itemId = ?")
        guard let row = try Row.fetchOne(stmt, arguments: [Data(id.bytes)]) else { return nil }
        return Array(try row.blob(at: 0, name: "itemRecord.record"))
    }

    /// One row of a listing: the clear item columns and the sealed record.
    public struct ListedItem: Sendable {
        public var row: ItemRow
        public var record: [UInt8]?
    }

    // MARK: Vault MAC

    /// The stored vault MAC, nil when the vault has none yet (format 1).
    public static func storedMAC(_ db: Database) throws -> [UInt8]? {
        guard let row = try Row.fetchOne(db, sql: "SELECT mac FROM vaultIntegrity WHERE singleton = 1") else { return nil }
        return Array(try row.blob(at: 0, name: "vaultIntegrity.mac", length: VaultMAC.length))
    }

    /// Replaces the stored vault MAC.
    public static func setStoredMAC(_ db: Database, _ mac: [UInt8]) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO vaultIntegrity (singleton, mac) VALUES (1, ?)", arguments: [Data(mac)])
    }

    /// Folds a write's accumulated terms into the stored MAC (same
    /// transaction). A vault without a stored MAC is refused: every write
    /// of an unlocked vault happens after its integrity data was built.
    public static func commitMAC(_ db: Database, _ mac: VaultMAC) throws {
        if mac.isZero { return }
        guard var stored = try storedMAC(db) else {
            throw StoreError.damaged("the vault MAC is missing")
        }
        for i in 0..<VaultMAC.length { stored[i] ^= mac.delta[i] }
        try setStoredMAC(db, stored)
    }

    /// Counts of what ``computeMAC(_:into:)`` covered.
    public struct MACCoverage: Sendable, Equatable {
        public var replicas = 0
        public var items = 0
        public var versions = 0
        public var history = 0
        public var itemsWithoutRecord: [ItemID] = []
    }

    /// Computes the vault MAC from every covered row (toggles each term
    /// into `mac`, which should start empty).
    @discardableResult
    public static func computeMAC(_ db: Database, into mac: VaultMAC) throws -> MACCoverage {
        var cover = MACCoverage()
        try mac.keepingReadable {
            mac.toggle(IntegrityTerm.header(try header(db)))
            let wrapping = try keyWrapping(db)
            if !wrapping.isInitial { mac.toggle(IntegrityTerm.keyWrapping(wrapping)) }
            let epoch = try keyEpoch(db)
            if let check = epoch.check { mac.toggle(IntegrityTerm.keyEpoch(epoch.epoch, check: check)) }
            let local = try localReplica(db)
            mac.toggle(IntegrityTerm.local(local.id, counter: local.counter))
            for r in try knownReplicas(db) {
                mac.toggle(IntegrityTerm.replica(r.id, counter: r.counter))
                cover.replicas += 1
            }
            for listed in try listedItems(db) {
                if listed.record == nil { cover.itemsWithoutRecord.append(listed.row.id) }
                mac.toggle(IntegrityTerm.item(listed.row, record: listed.record ?? []))
                cover.items += 1
            }
            for (table, isHistory) in [("fieldVersion", false), ("fieldHistory", true)] {
                let rows = try Row.fetchCursor(
                    db,
                    sql: "SELECT itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload\(isHistory ? ", supersededAt" : "") FROM \(table)")
                while let row = try rows.next() {
                    guard let item = ItemID(bytes: try row.blob(at: 0, name: "\(table).itemId", length: 16)),
                        let rid = RegisterID(bytes: try row.blob(at: 1, name: "\(table).registerId", length: 16))
                    else { throw StoreError.damaged("an identifier of wrong length in \(table)") }
                    let v = try positionalVersion(row, from: 2, table: table)
                    if isHistory {
                        mac.toggle(IntegrityTerm.history(item: item, register: rid, v, supersededAt: try row.int64(at: 8, name: "fieldHistory.supersededAt")))
                        cover.history += 1
                    } else {
                        mac.toggle(IntegrityTerm.version(item: item, register: rid, v))
                        cover.versions += 1
                    }
                }
            }
        }
        return cover
    }
}

extension ItemRow {
    /// From columns itemId, policy, nameHash, isDeleted, hasConflict,
    /// createdAt, updatedAt at positions 0 to 6.
    init(positional row: Row) throws {
        let t = "item"
        guard let id = ItemID(bytes: try row.blob(at: 0, name: "\(t).itemId", length: 16)) else {
            throw StoreError.damaged("item id of wrong length")
        }
        guard case .string(let p) = try row.storedValue(at: 1, name: "\(t).policy").storage, let policy = SyncPolicy(rawValue: p) else {
            throw StoreError.damaged("item.policy holds an unknown policy")
        }
        let hash = try row.optionalBlob(at: 2, name: "\(t).nameHash")
        if let hash, hash.count != 32 { throw StoreError.damaged("item.nameHash has \(hash.count) bytes instead of 32") }
        self.init(
            id: id, policy: policy, nameHash: hash.map { Array($0) }, isDeleted: try row.bool(at: 3, name: "\(t).isDeleted"),
            hasConflict: try row.bool(at: 4, name: "\(t).hasConflict"), createdAt: try row.int64(at: 5, name: "\(t).createdAt"),
            updatedAt: try row.int64(at: 6, name: "\(t).updatedAt"))
    }
}
