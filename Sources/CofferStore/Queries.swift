import CofferSync
import Foundation
import GRDB

/// Queries over a vault database, used inside ``VaultStore`` transactions.
public enum Queries {
    // MARK: Header and replicas

    public static func header(_ db: Database) throws -> VaultHeader {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM vault WHERE singleton = 1") else {
            throw StoreError.notAVault(path: db.description, reason: "the vault header is missing")
        }
        guard let id = VaultID(bytes: row["vaultId"] as Data) else {
            throw StoreError.database("vault id of wrong length")
        }
        return VaultHeader(
            formatVersion: row["formatVersion"], vaultID: id,
            kdfMemoryKiB: UInt32(row["kdfMemoryKiB"] as Int64), kdfIterations: UInt32(row["kdfIterations"] as Int64),
            kdfParallelism: UInt32(row["kdfParallelism"] as Int64), kdfSalt: Array(row["kdfSalt"] as Data),
            wrappedMasterKey: Array(row["wrappedMasterKey"] as Data), createdAt: row["createdAt"])
    }

    /// Replaces the KDF parameters, salt and wrapped key (passphrase change).
    public static func updateKeyWrapping(_ db: Database, header: VaultHeader) throws {
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

    public static func localReplica(_ db: Database) throws -> LocalReplica {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM localReplica WHERE singleton = 1"),
            let id = ReplicaID(bytes: row["replicaId"] as Data)
        else { throw StoreError.database("the local replica row is missing") }
        return LocalReplica(
            id: id, counter: UInt64(row["counter"] as Int64), boundHost: row["boundHost"],
            boundInode: row["boundInode"])
    }

    /// Replaces the local replica id (a copied vault file) and records it.
    public static func setLocalReplica(_ db: Database, id: ReplicaID, host: String?, inode: Int64?) throws {
        try db.execute(
            sql: "UPDATE localReplica SET replicaId = ?, counter = 0, boundHost = ?, boundInode = ? WHERE singleton = 1",
            arguments: [Data(id.bytes), host, inode])
        try db.execute(
            sql: "INSERT OR IGNORE INTO replica (replicaId, counter) VALUES (?, 0)", arguments: [Data(id.bytes)])
    }

    /// Takes the next dot of the local replica (bumps its counter).
    public static func nextDot(_ db: Database) throws -> Dot {
        let local = try localReplica(db)
        let next = local.counter + 1
        try db.execute(sql: "UPDATE localReplica SET counter = ? WHERE singleton = 1", arguments: [Int64(next)])
        try db.execute(
            sql: """
                INSERT INTO replica (replicaId, counter) VALUES (?, ?)
                ON CONFLICT(replicaId) DO UPDATE SET counter = max(counter, excluded.counter)
                """,
            arguments: [Data(local.id.bytes), Int64(next)])
        return Dot(replica: local.id, counter: next)
    }

    /// Every known replica with the highest counter seen.
    public static func knownReplicas(_ db: Database) throws -> [KnownReplica] {
        try Row.fetchAll(db, sql: "SELECT * FROM replica ORDER BY replicaId").compactMap { row in
            guard let id = ReplicaID(bytes: row["replicaId"] as Data) else { return nil }
            return KnownReplica(id: id, counter: UInt64(row["counter"] as Int64), lastImportAt: row["lastImportAt"])
        }
    }

    /// The summary vector: for each replica, the highest counter seen.
    public static func summary(_ db: Database) throws -> VersionVector {
        var pairs: [ReplicaID: UInt64] = [:]
        for r in try knownReplicas(db) { pairs[r.id] = r.counter }
        return VersionVector(pairs)
    }

    /// Raises the recorded counters to at least `vector`'s.
    public static func noteSeen(_ db: Database, vector: VersionVector, at time: Int64?) throws {
        for e in vector.entries {
            try db.execute(
                sql: """
                    INSERT INTO replica (replicaId, counter, lastImportAt) VALUES (?, ?, ?)
                    ON CONFLICT(replicaId) DO UPDATE SET counter = max(counter, excluded.counter),
                      lastImportAt = coalesce(excluded.lastImportAt, lastImportAt)
                    """,
                arguments: [Data(e.replica.bytes), Int64(e.counter), time])
        }
    }

    // MARK: Items

    public static func itemRow(_ db: Database, id: ItemID) throws -> ItemRow? {
        try Row.fetchOne(db, sql: "SELECT * FROM item WHERE itemId = ?", arguments: [Data(id.bytes)])
            .map(ItemRow.init(row:))
    }

    /// Live (not deleted) items whose shown name hashes to `nameHash`.
    public static func itemIDs(_ db: Database, nameHash: [UInt8], includeDeleted: Bool = false) throws -> [ItemID] {
        let sql =
            includeDeleted
            ? "SELECT itemId FROM item WHERE nameHash = ?"
            : "SELECT itemId FROM item WHERE nameHash = ? AND isDeleted = 0"
        return try Data.fetchAll(db, sql: sql, arguments: [Data(nameHash)]).compactMap { ItemID(bytes: $0) }
    }

    public static func itemRows(_ db: Database, includeDeleted: Bool = false) throws -> [ItemRow] {
        let sql = includeDeleted ? "SELECT * FROM item" : "SELECT * FROM item WHERE isDeleted = 0"
        return try Row.fetchAll(db, sql: sql).map(ItemRow.init(row:))
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
            guard let rid = RegisterID(bytes: row["registerId"] as Data) else { continue }
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
            out[rid] = try rows.map(FieldVersion.init(row:)).sorted { $0.dot < $1.dot }
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
            guard let item = ItemID(bytes: row["itemId"] as Data), let rid = RegisterID(bytes: row["registerId"] as Data)
            else { continue }
            out[item, default: [:]][rid, default: []].append(try FieldVersion(row: row))
        }
        return out
    }

    /// Writes an item's row and replaces its versions with `new`. Versions
    /// present in `old` but not in `new` move to the history table.
    public static func saveItem(_ db: Database, row: ItemRow, old: ItemState?, new: ItemState, now: Int64) throws {
        // Cached: imports call this once per item.
        try db.cachedStatement(
            sql: """
                INSERT INTO item (itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(itemId) DO UPDATE SET policy = excluded.policy, nameHash = excluded.nameHash,
                  isDeleted = excluded.isDeleted, hasConflict = excluded.hasConflict, updatedAt = excluded.updatedAt
                """
        ).execute(
            arguments: [
                Data(row.id.bytes), row.policy.rawValue, row.nameHash.map { Data($0) }, row.isDeleted,
                row.hasConflict, row.createdAt, row.updatedAt,
            ])
        let idData = Data(row.id.bytes)
        let insert = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO fieldVersion (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let retire = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO fieldHistory (itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload, supersededAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let remove = try db.cachedStatement(
            sql: "DELETE FROM fieldVersion WHERE itemId = ? AND registerId = ? AND replicaId = ? AND counter = ?")
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
                try remove.execute(arguments: [idData, ridData, Data(v.dot.replica.bytes), Int64(v.dot.counter)])
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
        ).compactMap { row in
            guard let rid = RegisterID(bytes: row["registerId"] as Data) else { return nil }
            return (rid, try FieldVersion(row: row), row["supersededAt"])
        }
    }

    /// The schema as SQLite reports it (for the schema test and `status`).
    public static func schemaSQL(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'grdb_%' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    }
}
