import CofferCrypto
import CofferSync
import Foundation
import GRDB

/// The vault-wide MAC (docs/key-hierarchy.md, "Vault MAC"): the XOR of one
/// keyed BLAKE2b-256 per covered row — the header, the local replica, each
/// replica of the summary, each item (its row, its sealed record's tag and
/// its current versions, in one term since format 6), each history
/// version, and sync's bookkeeping (the export mark and each local-only
/// item's private writer). A write toggles
/// out the terms of the rows it replaces and toggles in the new ones, so
/// keeping the MAC costs O(rows written), not O(vault); checking it
/// (`verify`, `export`, `import`, `sync`) reads every row once.
///
/// Beside the whole MAC, one partial MAC per ``Area`` (the XOR of that
/// area's terms only; format 4) lets `coffer verify` name what was changed.
///
/// One accumulator per write transaction, used by one thread at a time;
/// ``Queries/commitMAC(_:_:)`` folds it into the stored MAC before commit.
public final class VaultMAC: @unchecked Sendable {
    public static let length = 32

    /// What a term covers, by its tag byte (the first byte of the term).
    public enum Area: Int, CaseIterable, Sendable {
        /// "H" the header, "W" the passphrase wrapping's version, "K" the
        /// key epoch, "L" the local replica row; "M" each member publisher,
        /// "B" each replica binding and "U" each identity allowed to unlock
        /// the file (format 8).
        case header
        /// "R" each row of `replica` (the summary vector).
        case replicas
        /// "I" each item: its row, its sealed record and (format 6) its
        /// current versions.
        case items
        /// Current versions outside an item's term: format 5's "V" terms
        /// (one per version); since format 6 only versions of no item row
        /// ("O", which coffer never writes: the area stays zero).
        case versions
        /// "S" each history version.
        case history
        /// "E" sync's export mark (`localExport`).
        case exportMark
        /// "P" each local-only item's private writer (`localOnlyWriter`).
        case privateWriters

        /// Sync's bookkeeping (format 4): the areas older formats left out.
        public static let syncBookkeeping: [Area] = [.exportMark, .privateWriters]

        /// The area of a term with tag `tag`.
        public static func of(tag: UInt8) -> Area {
            switch tag {
            case UInt8(ascii: "R"): .replicas
            case UInt8(ascii: "I"): .items
            case UInt8(ascii: "V"), UInt8(ascii: "O"): .versions
            case UInt8(ascii: "S"): .history
            case UInt8(ascii: "E"): .exportMark
            case UInt8(ascii: "P"): .privateWriters
            default: .header
            }
        }

        /// What `coffer verify` says changed when this area's MAC differs.
        public var rows: String {
            switch self {
            case .header: "the header (vault id, KDF parameters, wrapped key, passphrase wrapping) or the local replica row"
            case .replicas: "rows of the replica table (what this vault has seen of each replica)"
            case .items: "item rows, their integrity records or their current field versions"
            case .versions: "current field versions of no item (or changed before this vault's upgrade to format 6)"
            case .history: "history versions"
            case .exportMark: "sync's bookkeeping of what this file has exported (localExport)"
            case .privateWriters: "sync's bookkeeping of the private writers of local-only items (localOnlyWriter)"
            }
        }
    }

    /// Bytes of the stored per-area MACs (``Area`` order).
    public static let areasLength = Area.allCases.count * length

    let key: SecretBytes
    let hasher: PreparedKeyedHash
    /// The whole MAC's change: the XOR of every toggled term.
    public private(set) var delta = [UInt8](repeating: 0, count: VaultMAC.length)
    /// The same per area: ``Area`` `i` at bytes `32 i ..< 32 (i + 1)`.
    public private(set) var areaDelta = [UInt8](repeating: 0, count: VaultMAC.areasLength)

    /// `key` is the vault-MAC sub-key of the master key.
    public convenience init(key: SecretBytes) { self.init(key: key, hasher: PreparedKeyedHash(key: key, length: Self.length)) }

    init(key: SecretBytes, hasher: PreparedKeyedHash) {
        self.key = key
        self.hasher = hasher
    }

    /// XORs in (or out: the same operation) the term of one row.
    public func toggle(_ message: [UInt8]) {
        message.withUnsafeBufferPointer { toggle($0) }
    }

    private func toggle(_ message: UnsafeBufferPointer<UInt8>) {
        let base = Area.of(tag: message.first ?? 0).rawValue * Self.length
        delta.withUnsafeMutableBytes { whole in
            areaDelta.withUnsafeMutableBytes { areas in
                hasher.hash(message) { h in
                    // 32 bytes as four 64-bit words (byte order does not
                    // matter to a XOR).
                    let digest = UnsafeRawBufferPointer(h)
                    for word in stride(from: 0, to: Self.length, by: 8) {
                        let d = digest.loadUnaligned(fromByteOffset: word, as: UInt64.self)
                        whole.storeBytes(of: whole.loadUnaligned(fromByteOffset: word, as: UInt64.self) ^ d, toByteOffset: word, as: UInt64.self)
                        areas.storeBytes(
                            of: areas.loadUnaligned(fromByteOffset: base + word, as: UInt64.self) ^ d, toByteOffset: base + word, as: UInt64.self)
                    }
                }
            }
        }
    }

    /// A buffer reused for the terms of bulk toggles (``toggleItem(_:record:state:)``):
    /// rows' clear columns and sealed records, nothing secret.
    private var termBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
    private var termCapacity = 512

    deinit { termBuffer.deallocate() }

    /// Toggles the term that `write` writes (at most `size` bytes) into
    /// the reused buffer.
    func toggleWritten(size: Int, _ write: (inout RawByteWriter) -> Void) {
        if size > termCapacity {
            termBuffer.deallocate()
            termCapacity = max(size, termCapacity * 2)
            termBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: termCapacity)
        }
        var w = RawByteWriter(termBuffer)
        write(&w)
        precondition(w.written <= size, "integrity term size")
        toggle(UnsafeBufferPointer(start: termBuffer, count: w.written))
    }

    /// XORs in what another accumulator collected (a second thread's).
    public func absorb(_ other: VaultMAC) {
        for i in 0..<Self.length { delta[i] ^= other.delta[i] }
        for i in 0..<Self.areasLength { areaDelta[i] ^= other.areaDelta[i] }
    }

    public var isZero: Bool { delta.allSatisfy { $0 == 0 } && areaDelta.allSatisfy { $0 == 0 } }

    /// The MAC of one area (its bytes of ``areaDelta``).
    public func area(_ a: Area) -> [UInt8] { Array(areaDelta[a.rawValue * Self.length..<(a.rawValue + 1) * Self.length]) }

    /// Runs `body` with the key kept readable (bulk work: no `mprotect`
    /// pair per term).
    public func keepingReadable<R>(_ body: () throws -> R) rethrows -> R {
        try key.keepingReadable(body)
    }

    /// A new accumulator under the same key (with its own prepared hash
    /// state: for another thread).
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
        replicaCounter(UInt8(ascii: "L"), id, counter)
    }

    public static func replica(_ id: ReplicaID, counter: UInt64) -> [UInt8] {
        replicaCounter(UInt8(ascii: "R"), id, counter)
    }

    /// The export mark (`localExport`, format 4): the replica id and the
    /// highest of its counters this file has put in a bundle.
    public static func exportMark(_ id: ReplicaID, counter: UInt64) -> [UInt8] {
        replicaCounter(UInt8(ascii: "E"), id, counter)
    }

    /// `tag || replica id || u64 counter`: the shape of the "L", "R" and "E" terms.
    private static func replicaCounter(_ tag: UInt8, _ id: ReplicaID, _ counter: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 25)
        w.u8(tag)
        w.id(id)
        w.u64(counter)
        return w.data
    }

    /// A local-only item's private writer (`localOnlyWriter`, format 4).
    public static func privateWriter(item: ItemID, writer: ReplicaID) -> [UInt8] {
        var w = ByteWriter(capacity: 33)
        w.u8(UInt8(ascii: "P"))
        w.id(item)
        w.id(writer)
        return w.data
    }

    /// An item's term (format 6): its row, its sealed record (through the
    /// record's Poly1305 tag) and every current version of `state`, which
    /// must be the versions stored for the item.
    public static func item(_ row: ItemRow, record: [UInt8], state: ItemState) -> [UInt8] {
        let versions = RawTerm.Listed.of(state)
        return RawTerm.array(size: RawTerm.itemSize(row, versions: versions)) {
            RawTerm.writeItem(row, record: record, versions: versions, into: &$0)
        }
    }

    /// Formats 2 to 5: an item row with its whole sealed record (the
    /// versions had their own "V" terms). For the upgrade to format 6.
    public static func format5Item(_ row: ItemRow, record: [UInt8]) -> [UInt8] {
        RawTerm.array(size: RawTerm.format5ItemSize(row, recordCount: record.count)) {
            RawTerm.writeFormat5Item(row, record: record, into: &$0)
        }
    }

    /// Formats 2 to 5: one current version. For the upgrade to format 6.
    public static func format5Version(item: ItemID, register: RegisterID, _ v: FieldVersion) -> [UInt8] {
        version(tag: "V", item: item, register: register, v, supersededAt: nil)
    }

    /// Format 6: a current version whose item has no row (coffer never
    /// writes one; it makes the MAC's "versions" area differ).
    static func orphanVersion(item: ItemID, register: RegisterID, _ v: FieldVersion) -> [UInt8] {
        version(tag: "O", item: item, register: register, v, supersededAt: nil)
    }

    public static func history(item: ItemID, register: RegisterID, _ v: FieldVersion, supersededAt: Int64) -> [UInt8] {
        version(tag: "S", item: item, register: register, v, supersededAt: supersededAt)
    }

    static func version(
        tag: Unicode.Scalar, item: ItemID, register: RegisterID, _ v: FieldVersion, supersededAt: Int64?
    ) -> [UInt8] {
        let vector = v.vector.encoded
        // The payload's Poly1305 tag (its last 16 bytes) stands for the
        // payload: it authenticates the ciphertext and its associated data
        // under the item key, and no one without the key finds another
        // payload with the same tag. Hashing 16 bytes instead of the whole
        // payload keeps bulk imports cheap.
        return RawTerm.array(size: RawTerm.versionSize(vectorCount: vector.count, history: supersededAt != nil)) {
            RawTerm.writeVersion(
                tag: UInt8(ascii: tag), item: item, register: register, v, vector: vector, supersededAt: supersededAt, into: &$0)
        }
    }
}

extension Queries {
    // MARK: Item records

    /// The sealed integrity record of an item, nil when it has none (or
    /// no row).
    public static func itemRecord(_ db: Database, id: ItemID) throws -> [UInt8]? { try itemRecord(ReadConnection(db), id: id) }

    public static func itemRecord(_ db: ReadConnection, id: ItemID) throws -> [UInt8]? {
        try db.fetchOne("SELECT record FROM item WHERE itemId = ?", [.blob(id.bytes)], cached: true) { row in
            try row.optionalBytes(at: 0, name: "item.record")
        } ?? nil
    }

    /// Replaces the sealed record of an existing item (rekey, the upgrade
    /// of a format-1 vault). MAC terms are the caller's.
    public static func replaceItemRecord(_ db: Database, id: ItemID, record: [UInt8]) throws {
        try db.cachedStatement(sql: "UPDATE item SET record = ? WHERE itemId = ?").execute(arguments: [Data(record), Data(id.bytes)])
    }

    /// One row of a listing: the clear item columns and the sealed record.
    public struct ListedItem: Sendable {
        public var row: ItemRow
        public var record: [UInt8]?
    }

    // MARK: Vault MAC

    /// The stored vault MAC, nil when the vault has none yet (format 1).
    public static func storedMAC(_ db: Database) throws -> [UInt8]? { try storedMAC(ReadConnection(db)) }

    public static func storedMAC(_ db: ReadConnection) throws -> [UInt8]? {
        try db.fetchOne("SELECT mac FROM vaultIntegrity WHERE singleton = 1") { row in
            try row.bytes(at: 0, name: "vaultIntegrity.mac", length: VaultMAC.length)
        }
    }

    /// The stored per-area MACs (``VaultMAC/Area`` order), nil when the
    /// vault has none (before format 4; or removed outside coffer).
    public static func storedAreaMACs(_ db: Database) throws -> [UInt8]? {
        guard let row = try Row.fetchOne(db, sql: "SELECT areaMacs FROM vaultIntegrity WHERE singleton = 1"),
            let areas = try row.optionalBlob(at: 0, name: "vaultIntegrity.areaMacs")
        else { return nil }
        guard areas.count == VaultMAC.areasLength else {
            throw StoreError.damaged("vaultIntegrity.areaMacs has \(areas.count) bytes instead of \(VaultMAC.areasLength)")
        }
        return Array(areas)
    }

    /// Replaces the stored vault MAC and its per-area MACs with what
    /// `mac` accumulated (a MAC computed from every row, or a new vault's
    /// first terms).
    public static func setStoredMAC(_ db: Database, _ mac: VaultMAC) throws {
        try setStoredMAC(db, whole: mac.delta, areas: mac.areaDelta)
    }

    static func setStoredMAC(_ db: Database, whole: [UInt8], areas: [UInt8]) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO vaultIntegrity (singleton, mac, areaMacs) VALUES (1, ?, ?)")
            .execute(arguments: [Data(whole), Data(areas)])
    }

    /// Folds a write's accumulated terms into the stored MAC (same
    /// transaction). A vault without a stored MAC is refused: every write
    /// of an unlocked vault happens after its integrity data was built.
    public static func commitMAC(_ db: Database, _ mac: VaultMAC) throws {
        if mac.isZero { return }
        let stmt = try db.cachedStatement(sql: "SELECT mac, areaMacs FROM vaultIntegrity WHERE singleton = 1")
        guard let row = try Row.fetchOne(stmt), let storedAreas = try row.optionalBlob(at: 1, name: "vaultIntegrity.areaMacs") else {
            throw StoreError.damaged("the vault MAC is missing")
        }
        var stored = Array(try row.blob(at: 0, name: "vaultIntegrity.mac", length: VaultMAC.length))
        guard storedAreas.count == VaultMAC.areasLength else {
            throw StoreError.damaged("vaultIntegrity.areaMacs has \(storedAreas.count) bytes instead of \(VaultMAC.areasLength)")
        }
        var areas = Array(storedAreas)
        for i in 0..<VaultMAC.length { stored[i] ^= mac.delta[i] }
        for i in 0..<VaultMAC.areasLength { areas[i] ^= mac.areaDelta[i] }
        try setStoredMAC(db, whole: stored, areas: areas)
    }

    /// Brings the stored MAC of a vault of an older format (2 to 5) to the
    /// current rules (one transaction, with the key; `Vault.ensureIntegrity`)
    /// by *folding* it, never recomputing it: `expected` is what the old
    /// format's rules give for the rows as they were (old header
    /// included), `fresh` what the current rules give after the upgrade.
    /// The stored MAC becomes `stored ⊕ expected ⊕ fresh`: `fresh` when the
    /// stored MAC matched its rows, and off by the same difference, in the
    /// same areas, when a row was changed outside coffer before the
    /// upgrade. Per-area MACs that did not exist yet (before format 4) are
    /// taken from `fresh`: an earlier edit then shows only in the whole MAC.
    public static func foldStoredMAC(_ db: Database, expected: VaultMAC, fresh: VaultMAC) throws {
        guard var stored = try storedMAC(db) else { throw StoreError.damaged("the vault MAC is missing") }
        for i in 0..<VaultMAC.length { stored[i] ^= expected.delta[i] ^ fresh.delta[i] }
        var areas = fresh.areaDelta
        if let storedAreas = try storedAreaMACs(db) {
            for i in 0..<VaultMAC.areasLength { areas[i] = storedAreas[i] ^ expected.areaDelta[i] ^ fresh.areaDelta[i] }
        }
        try setStoredMAC(db, whole: stored, areas: areas)
    }

    /// Counts of what ``computeMAC(_:into:)`` covered.
    public struct MACCoverage: Sendable, Equatable {
        public var replicas = 0
        public var items = 0
        public var versions = 0
        public var history = 0
        /// Rows of sync's bookkeeping: the export mark and private writers.
        public var bookkeeping = 0
        public var itemsWithoutRecord: [ItemID] = []
    }

    /// Which terms ``computeMAC(_:into:rules:)`` computes.
    public enum MACRules: Sendable, Equatable {
        /// Format 6: one "I" term per item, its current versions in it.
        case current
        /// Formats 2 to 5, for the upgrade to format 6: "I" over the item
        /// row and its whole sealed record, one "V" term per current
        /// version; the terms of sync's bookkeeping ("E", "P") only when
        /// `bookkeeping` (formats 4 and 5).
        case format5(bookkeeping: Bool)

        /// Whether sync's bookkeeping ("E", "P") has terms.
        var coversBookkeeping: Bool { self != .format5(bookkeeping: false) }
    }

    /// Computes the vault MAC from every covered row (toggles each term
    /// into `mac`, which should start empty), by the rules of the current
    /// format unless told otherwise.
    @discardableResult
    public static func computeMAC(_ db: Database, into mac: VaultMAC, rules: MACRules = .current) throws -> MACCoverage {
        var cover = MACCoverage()
        try mac.keepingReadable {
            mac.toggle(IntegrityTerm.header(try header(db)))
            let wrapping = try keyWrapping(db)
            if !wrapping.isInitial { mac.toggle(IntegrityTerm.keyWrapping(wrapping)) }
            let epoch = try keyEpoch(db)
            if let check = epoch.check { mac.toggle(IntegrityTerm.keyEpoch(epoch.epoch, check: check)) }
            for row in try identityUnlocks(db) {
                mac.toggle(IntegrityTerm.identityUnlock(identity: row.identity, sealedKey: row.sealedKey))
            }
            let local = try localReplica(db)
            mac.toggle(IntegrityTerm.local(local.id, counter: local.counter))
            for r in try knownReplicas(db) {
                mac.toggle(IntegrityTerm.replica(r.id, counter: r.counter))
                cover.replicas += 1
            }
            // Format 8's publishers and replica bindings (none in a vault
            // without members).
            for p in try publishers(db) { mac.toggle(IntegrityTerm.publisher(p)) }
            for (replica, key) in try replicaBindings(db) { mac.toggle(IntegrityTerm.replicaBinding(replica, signKey: key)) }
            if rules.coversBookkeeping {
                if let mark = try exportMark(db) {
                    mac.toggle(IntegrityTerm.exportMark(mark.replica, counter: mark.counter))
                    cover.bookkeeping += 1
                }
                for (item, writer) in try localOnlyWriters(db) {
                    mac.toggle(IntegrityTerm.privateWriter(item: item, writer: writer))
                    cover.bookkeeping += 1
                }
            }
            let items = try listedItems(db)
            cover.items = items.count
            for listed in items where listed.record == nil { cover.itemsWithoutRecord.append(listed.row.id) }
            if rules == .current {
                // Both scans are in item id order: each item's term takes
                // the versions read since the previous item.
                var next = 0
                var listed: [RawTerm.Listed] = []
                func toggleItem() {
                    listed.sort(by: RawTerm.Listed.precedes)
                    mac.toggleItem(items[next].row, record: items[next].record ?? [], versions: listed)
                    listed.removeAll(keepingCapacity: true)
                    next += 1
                }
                try forEachVersion(db, table: "fieldVersion", orderedByItem: true) { item, rid, v, _ in
                    cover.versions += 1
                    while next < items.count && items[next].row.id < item { toggleItem() }
                    if next < items.count && items[next].row.id == item {
                        listed.append(RawTerm.Listed(register: rid, version: v, vector: v.vector.encoded))
                    } else {
                        mac.toggle(IntegrityTerm.orphanVersion(item: item, register: rid, v))
                    }
                }
                while next < items.count { toggleItem() }
            } else {
                for listed in items { mac.toggle(IntegrityTerm.format5Item(listed.row, record: listed.record ?? [])) }
                try forEachVersion(db, table: "fieldVersion", orderedByItem: false) { item, rid, v, _ in
                    mac.toggle(IntegrityTerm.format5Version(item: item, register: rid, v))
                    cover.versions += 1
                }
            }
            try forEachVersion(db, table: "fieldHistory", orderedByItem: false) { item, rid, v, supersededAt in
                mac.toggle(IntegrityTerm.history(item: item, register: rid, v, supersededAt: supersededAt ?? 0))
                cover.history += 1
            }
        }
        return cover
    }

    /// Every row of `fieldVersion` or `fieldHistory` (with its
    /// `supersededAt`), decoded and range-checked.
    private static func forEachVersion(
        _ db: Database, table: String, orderedByItem: Bool, _ body: (ItemID, RegisterID, FieldVersion, Int64?) throws -> Void
    ) throws {
        let isHistory = table == "fieldHistory"
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload\(isHistory ? ", supersededAt" : "")
                FROM \(table)\(orderedByItem ? " ORDER BY itemId, registerId, replicaId, counter" : "")
                """)
        while let row = try rows.next() {
            guard let item = ItemID(bytes: try row.blob(at: 0, name: "\(table).itemId", length: 16)),
                let rid = RegisterID(bytes: try row.blob(at: 1, name: "\(table).registerId", length: 16))
            else { throw StoreError.damaged("an identifier of wrong length in \(table)") }
            let v = try positionalVersion(row, from: 2, table: table)
            try body(item, rid, v, isHistory ? try row.int64(at: 8, name: "fieldHistory.supersededAt") : nil)
        }
    }
}

extension ItemRow {
    /// From columns itemId, policy, nameHash, isDeleted, hasConflict,
    /// createdAt, updatedAt at positions 0 to 6 (GRDB's rows and
    /// ``RawRow``s alike).
    init(positional row: some CheckedColumns) throws {
        let t = "item"
        guard let id = ItemID(bytes: try row.bytes(at: 0, name: "\(t).itemId", length: 16)) else {
            throw StoreError.damaged("item id of wrong length")
        }
        guard let policy = SyncPolicy(rawValue: try row.text(at: 1, name: "\(t).policy")) else {
            throw StoreError.damaged("item.policy holds an unknown policy")
        }
        let hash = try row.optionalBytes(at: 2, name: "\(t).nameHash")
        if let hash, hash.count != 32 { throw StoreError.damaged("item.nameHash has \(hash.count) bytes instead of 32") }
        self.init(
            id: id, policy: policy, nameHash: hash, isDeleted: try row.storedBool(at: 3, name: "\(t).isDeleted"),
            hasConflict: try row.storedBool(at: 4, name: "\(t).hasConflict"), createdAt: try row.int64(at: 5, name: "\(t).createdAt", in: .min ... .max),
            updatedAt: try row.int64(at: 6, name: "\(t).updatedAt", in: .min ... .max))
    }
}
