import CofferSync
import Foundation
import GRDB

/// Queries over a vault database, used inside ``VaultStore`` transactions.
public enum Queries {
    // MARK: Header and replicas

    public static func header(_ db: Database) throws -> VaultHeader { try header(ReadConnection(db)) }

    public static func header(_ db: ReadConnection) throws -> VaultHeader {
        let t = "vault"
        let k = StoredLimits.kdfParameter
        let header = try db.fetchOne("SELECT * FROM vault WHERE singleton = 1") { row in
            guard let id = VaultID(bytes: try row.bytes("vaultId", table: t, length: 16)) else {
                throw StoreError.damaged("vault id of wrong length")
            }
            return VaultHeader(
                formatVersion: Int(try row.int64("formatVersion", table: t, in: 1...1_000_000)), vaultID: id,
                kdfMemoryKiB: try row.uint32("kdfMemoryKiB", table: t, in: k),
                kdfIterations: try row.uint32("kdfIterations", table: t, in: k),
                kdfParallelism: try row.uint32("kdfParallelism", table: t, in: k),
                kdfSalt: try row.bytes("kdfSalt", table: t, length: 16),
                wrappedMasterKey: try row.bytes("wrappedMasterKey", table: t, length: 72),
                createdAt: try row.int64("createdAt", table: t))
        }
        guard let header else { throw StoreError.notAVault(path: "the vault", reason: "the vault header is missing") }
        return header
    }

    /// Replaces the KDF parameters, salt and wrapped key (passphrase change).
    public static func updateKeyWrapping(_ db: Database, header: VaultHeader, mac: VaultMAC) throws {
        mac.toggle(IntegrityTerm.header(try self.header(db)))
        mac.toggle(IntegrityTerm.header(header))
        try db.execute(
            sql: """
                UPDATE vault SET kdfMemoryKiB = ?, kdfIterations = ?, kdfParallelism = ?, kdfSalt = ?,
                  wrappedMasterKey = ? WHERE singleton = 1
                """,
            arguments: [
                Int64(header.kdfMemoryKiB), Int64(header.kdfIterations), Int64(header.kdfParallelism),
                Data(header.kdfSalt), Data(header.wrappedMasterKey),
            ])
    }

    /// ``updateKeyWrapping(_:header:mac:)`` and the header's format number
    /// in one step (the format number says which binding the wrapped key
    /// was made with: vault format 7).
    public static func updateHeaderWrapping(_ db: Database, header: VaultHeader, mac: VaultMAC) throws {
        try updateKeyWrapping(db, header: header, mac: mac)
        // updateKeyWrapping toggled the term of `header` with its format
        // number; the stored row takes that number now.
        try db.execute(sql: "UPDATE vault SET formatVersion = ? WHERE singleton = 1", arguments: [header.formatVersion])
    }

    public static func localReplica(_ db: Database) throws -> LocalReplica {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM localReplica WHERE singleton = 1") else {
            throw StoreError.damaged("the local replica row is missing")
        }
        let t = "localReplica"
        guard let id = ReplicaID(bytes: try row.blob("replicaId", table: t, length: 16)) else {
            throw StoreError.damaged("replica id of wrong length")
        }
        return LocalReplica(
            id: id, counter: try row.counter("counter", table: t), boundHost: try row.optionalText("boundHost", table: t),
            boundInode: try row.optionalInt64("boundInode", table: t))
    }

    /// Replaces the local replica id (a copied vault file) and records it.
    public static func setLocalReplica(_ db: Database, id: ReplicaID, host: String?, inode: Int64?, mac: VaultMAC) throws {
        let old = try localReplica(db)
        mac.toggle(IntegrityTerm.local(old.id, counter: old.counter))
        mac.toggle(IntegrityTerm.local(id, counter: 0))
        try db.execute(
            sql: "UPDATE localReplica SET replicaId = ?, counter = 0, boundHost = ?, boundInode = ? WHERE singleton = 1",
            arguments: [Data(id.bytes), host, inode])
        try db.execute(
            sql: "INSERT OR IGNORE INTO replica (replicaId, counter) VALUES (?, 0)", arguments: [Data(id.bytes)])
        if db.changesCount == 1 { mac.toggle(IntegrityTerm.replica(id, counter: 0)) }
    }

    /// The counter recorded for `replica` in the summary, nil when unknown.
    static func replicaCounter(_ db: Database, _ replica: ReplicaID) throws -> UInt64? {
        let stmt = try db.cachedStatement(sql: "SELECT counter FROM replica WHERE replicaId = ?")
        guard let row = try Row.fetchOne(stmt, arguments: [Data(replica.bytes)]) else { return nil }
        return try row.counter(at: 0, name: "replica.counter")
    }

    /// Raises the summary's counter for `replica` to `counter` (never
    /// lowers it), keeping the MAC.
    static func raiseReplica(_ db: Database, _ replica: ReplicaID, to counter: UInt64, at time: Int64?, mac: VaultMAC) throws {
        let old = try replicaCounter(db, replica)
        if let old, old >= counter {
            if let time {
                try db.execute(sql: "UPDATE replica SET lastImportAt = ? WHERE replicaId = ?", arguments: [time, Data(replica.bytes)])
            }
            return
        }
        if let old { mac.toggle(IntegrityTerm.replica(replica, counter: old)) }
        mac.toggle(IntegrityTerm.replica(replica, counter: counter))
        try db.execute(
            sql: """
                INSERT INTO replica (replicaId, counter, lastImportAt) VALUES (?, ?, ?)
                ON CONFLICT(replicaId) DO UPDATE SET counter = excluded.counter,
                  lastImportAt = coalesce(excluded.lastImportAt, lastImportAt)
                """,
            arguments: [Data(replica.bytes), Int64(counter), time])
    }

    /// Takes the next dot of the local replica (bumps its counter).
    public static func nextDot(_ db: Database, mac: VaultMAC) throws -> Dot {
        let local = try localReplica(db)
        guard local.counter < UInt64(StoredLimits.maxCounter) else {
            throw StoreError.damaged("the local replica's counter is at its limit")
        }
        let next = local.counter + 1
        mac.toggle(IntegrityTerm.local(local.id, counter: local.counter))
        mac.toggle(IntegrityTerm.local(local.id, counter: next))
        try db.execute(sql: "UPDATE localReplica SET counter = ? WHERE singleton = 1", arguments: [Int64(next)])
        try raiseReplica(db, local.id, to: next, at: nil, mac: mac)
        return Dot(replica: local.id, counter: next)
    }

    /// Every known replica with the highest counter seen.
    public static func knownReplicas(_ db: Database) throws -> [KnownReplica] {
        try Row.fetchAll(db, sql: "SELECT * FROM replica ORDER BY replicaId").map { row in
            let t = "replica"
            guard let id = ReplicaID(bytes: try row.blob("replicaId", table: t, length: 16)) else {
                throw StoreError.damaged("replica id of wrong length")
            }
            return KnownReplica(
                id: id, counter: try row.counter("counter", table: t), lastImportAt: try row.optionalInt64("lastImportAt", table: t))
        }
    }

    /// `summary(db)[replica]` without building the whole vector (one row;
    /// 0 when the replica is unknown): `add`'s replica check asks for its
    /// own id on every write.
    public static func seenCounter(_ db: Database, of replica: ReplicaID) throws -> UInt64 {
        try replicaCounter(db, replica) ?? 0
    }

    /// The summary vector: for each replica, the highest counter seen.
    public static func summary(_ db: Database) throws -> VersionVector {
        var pairs: [ReplicaID: UInt64] = [:]
        for r in try knownReplicas(db) { pairs[r.id] = r.counter }
        return VersionVector(pairs)
    }

    /// Raises the recorded counters to at least `vector`'s.
    public static func noteSeen(_ db: Database, vector: VersionVector, at time: Int64?, mac: VaultMAC) throws {
        for e in vector.entries {
            guard e.counter <= UInt64(StoredLimits.maxCounter) else {
                throw StoreError.damaged("a counter above 2^53")
            }
            try raiseReplica(db, e.replica, to: e.counter, at: time, mac: mac)
        }
    }

    // MARK: Items

    public static func itemRow(_ db: Database, id: ItemID) throws -> ItemRow? { try cachedItemRow(ReadConnection(db), id: id) }

    /// Live (not deleted) items whose shown name hashes to `nameHash`.
    public static func itemIDs(_ db: Database, nameHash: [UInt8], includeDeleted: Bool = false) throws -> [ItemID] {
        try itemIDs(ReadConnection(db), nameHash: nameHash, includeDeleted: includeDeleted)
    }

    public static func itemIDs(_ db: ReadConnection, nameHash: [UInt8], includeDeleted: Bool = false) throws -> [ItemID] {
        let sql =
            includeDeleted
            ? "SELECT itemId FROM item WHERE nameHash = ?"
            : "SELECT itemId FROM item WHERE nameHash = ? AND isDeleted = 0"
        var ids: [ItemID] = []
        try db.forEachRow(sql, [.blob(nameHash)], cached: true) { row in
            if let id = ItemID(bytes: try row.bytes(at: 0, name: "item.itemId", length: nil)) { ids.append(id) }
        }
        return ids
    }

    /// The ids of the items (deleted ones included) with `policy`.
    public static func itemIDs(_ db: Database, policy: SyncPolicy) throws -> [ItemID] {
        // The policy as a literal, not a bound parameter: SQLite uses the
        // partial index item_localOnly (format 8) only for a WHERE clause
        // it can match when the statement is prepared; otherwise finding
        // the few local-only items reads every item row (20–28 ms at
        // 100,000 items, on every `sync`).
        let sql = policy == .localOnly ? "SELECT itemId FROM item WHERE policy = 'local-only'" : "SELECT itemId FROM item WHERE policy = 'sync'"
        return try Data.fetchAll(db, sql: sql).map { data in
            guard let id = ItemID(bytes: Array(data)) else { throw StoreError.damaged("item.itemId of wrong length") }
            return id
        }
    }

    public static func itemRows(_ db: Database, includeDeleted: Bool = false) throws -> [ItemRow] {
        try itemRows(ReadConnection(db), includeDeleted: includeDeleted)
    }

    public static func itemRows(_ db: ReadConnection, includeDeleted: Bool = false) throws -> [ItemRow] {
        let columns = "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt FROM item"
        var rows: [ItemRow] = []
        try db.forEachRow(includeDeleted ? columns : columns + " WHERE isDeleted = 0") { rows.append(try ItemRow(positional: $0)) }
        return rows
    }

    public static func itemCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE isDeleted = 0") ?? 0
    }

    /// All current versions of one item.
    public static func itemState(_ db: Database, id: ItemID) throws -> ItemState {
        var state = ItemState(id: id)
        let rows = try Row.fetchAll(
            db, sql: "SELECT * FROM fieldVersion WHERE itemId = ?", arguments: [Data(id.bytes)])
        for row in rows {
            guard let rid = RegisterID(bytes: try row.blob("registerId", table: "fieldVersion", length: 16)) else { continue }
            state.registers[rid, default: []].append(try FieldVersion(row: row))
        }
        for k in state.registers.keys { state.registers[k]!.sort { $0.dot < $1.dot } }
        return state
    }

    /// Current versions of selected registers of one item.
    public static func versions(_ db: Database, item: ItemID, registers: [RegisterID]) throws -> [RegisterID: [FieldVersion]] {
        var out: [RegisterID: [FieldVersion]] = [:]
        let stmt = try db.cachedStatement(sql: "SELECT * FROM fieldVersion WHERE itemId = ? AND registerId = ?")
        for rid in registers {
            let rows = try Row.fetchAll(stmt, arguments: [Data(item.bytes), Data(rid.bytes)])
            out[rid] = try rows.map { try FieldVersion(row: $0) }.sorted { $0.dot < $1.dot }
        }
        return out
    }

    /// Versions of the given registers for every item, in one pass (for
    /// listings).
    public static func versionsOfAllItems(_ db: Database, registers: [RegisterID]) throws -> [ItemID: [RegisterID: [FieldVersion]]] {
        var out: [ItemID: [RegisterID: [FieldVersion]]] = [:]
        let placeholders = registers.map { _ in "?" }.joined(separator: ",")
        let rows = try Row.fetchCursor(
            db, sql: "SELECT * FROM fieldVersion WHERE registerId IN (\(placeholders))",
            arguments: StatementArguments(registers.map { Data($0.bytes) }))
        while let row = try rows.next() {
            guard let item = ItemID(bytes: try row.blob("itemId", table: "fieldVersion", length: 16)),
                let rid = RegisterID(bytes: try row.blob("registerId", table: "fieldVersion", length: 16))
            else { continue }
            out[item, default: [:]][rid, default: []].append(try FieldVersion(row: row))
        }
        return out
    }

    /// Writes an item's row and replaces its versions with `new`. Versions
    /// present in `old` but not in `new` move to the history table; a
    /// version of `new` whose dot `old` holds with other content (a merge
    /// picked the other copy of one write: `Register.normalize`) replaces
    /// the stored row, so the rows always equal `new`, which the record
    /// and the item's MAC term are made from.
    /// `old` must be the versions stored for the item (nil: none, or read
    /// here when the item has a row). `record` is the item's sealed
    /// integrity record; the item's MAC terms (its term before and after,
    /// history versions added) are toggled into `mac`.
    public static func saveItem(
        _ db: Database, row: ItemRow, record: [UInt8], old: ItemState?, new: ItemState, now: Int64, mac: VaultMAC
    ) throws {
        var old = old
        if let oldRow = try cachedItemRow(db, id: row.id) {
            if old == nil { old = try cachedItemState(db, id: row.id) }
            mac.toggleItem(oldRow, record: try itemRecord(db, id: row.id) ?? [], state: old ?? ItemState(id: row.id))
        }
        mac.toggleItem(row, record: record, state: new)
        // Cached: imports call this once per item.
        try db.cachedStatement(
            sql: """
                INSERT INTO item (itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(itemId) DO UPDATE SET policy = excluded.policy, nameHash = excluded.nameHash,
                  isDeleted = excluded.isDeleted, hasConflict = excluded.hasConflict, updatedAt = excluded.updatedAt,
                  record = excluded.record
                """
        ).execute(
            arguments: [
                Data(row.id.bytes), row.policy.rawValue, row.nameHash.map { Data($0) }, row.isDeleted,
                row.hasConflict, row.createdAt, row.updatedAt, Data(record),
            ])
        let idData = Data(row.id.bytes)
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let retire = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO fieldHistory (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload, supersededAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let remove = try db.cachedStatement(
            sql: "DELETE FROM fieldVersion WHERE itemId = ? AND registerId = ? AND replicaId = ? AND counter = ?")
        let replace = try db.cachedStatement(
            sql: """
                UPDATE fieldVersion SET vector = ?, writtenAt = ?, isTombstone = ?, payload = ?
                WHERE itemId = ? AND registerId = ? AND replicaId = ? AND counter = ?
                """)
        let oldRegisters = old?.registers ?? [:]
        for rid in Set(oldRegisters.keys).union(new.registers.keys) {
            let before = oldRegisters[rid] ?? []
            let after = new.registers[rid] ?? []
            let afterDots = Set(after.map(\.dot))
            let beforeDots = Set(before.map(\.dot))
            let ridData = Data(rid.bytes)
            for v in before where !afterDots.contains(v.dot) {
                let args: StatementArguments = [
                    idData, ridData, Data(v.dot.replica.bytes), Int64(v.dot.counter), Data(v.vector.encoded),
                    v.writtenAt, v.isTombstone, Data(v.payload),
                ]
                try retire.execute(arguments: args + [now])
                if db.changesCount == 1 { mac.toggle(IntegrityTerm.history(item: row.id, register: rid, v, supersededAt: now)) }
                try remove.execute(arguments: [idData, ridData, Data(v.dot.replica.bytes), Int64(v.dot.counter)])
            }
            for v in after where beforeDots.contains(v.dot) {
                guard let held = before.first(where: { $0.dot == v.dot }), held != v else { continue }
                try replace.execute(arguments: [
                    Data(v.vector.encoded), v.writtenAt, v.isTombstone, Data(v.payload), idData, ridData, Data(v.dot.replica.bytes),
                    Int64(v.dot.counter),
                ])
            }
            for v in after where !beforeDots.contains(v.dot) {
                try insert.execute(arguments: [
                    idData, ridData, Data(v.dot.replica.bytes), Int64(v.dot.counter), Data(v.vector.encoded),
                    v.writtenAt, v.isTombstone, Data(v.payload),
                ])
            }
        }
    }

    /// Superseded versions of an item, oldest first.
    public static func history(_ db: Database, item: ItemID) throws -> [(RegisterID, FieldVersion, Int64)] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM fieldHistory WHERE itemId = ? ORDER BY writtenAt", arguments: [Data(item.bytes)]
        ).map { row in
            let t = "fieldHistory"
            guard let rid = RegisterID(bytes: try row.blob("registerId", table: t, length: 16)) else {
                throw StoreError.damaged("register id of wrong length")
            }
            return (rid, try FieldVersion(row: row, table: t), try row.int64("supersededAt", table: t))
        }
    }

    /// The schema as SQLite reports it (for the schema test and `status`).
    public static func schemaSQL(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'grdb_%' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    }
}
