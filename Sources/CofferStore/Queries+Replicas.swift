import CofferSync
import Foundation
import GRDB

/// Bookkeeping for restored vault files and local-only items
/// (docs/sync.md, "Restored vault files" and "Local-only items").
extension Queries {
    /// The row of `localExport` as stored (any replica id), nil when absent.
    public static func exportMark(_ db: Database) throws -> (replica: ReplicaID, counter: UInt64)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT replicaId, counter FROM localExport WHERE singleton = 1") else { return nil }
        guard let id = ReplicaID(bytes: try row.blob(at: 0, name: "localExport.replicaId", length: 16)) else {
            throw StoreError.damaged("replica id of wrong length in localExport")
        }
        return (id, try row.counter(at: 1, name: "localExport.counter"))
    }

    /// The highest counter of the local replica id that this file has put
    /// in a bundle; 0 when it never exported under its current id.
    public static func exportedCounter(_ db: Database) throws -> UInt64 {
        let local = try localReplica(db)
        guard let mark = try exportMark(db), mark.replica == local.id else { return 0 }
        return mark.counter
    }

    /// Records that a bundle holding every write of `replica` up to
    /// `counter` was written (keeping the vault MAC).
    public static func noteExported(_ db: Database, replica: ReplicaID, counter: UInt64, mac: VaultMAC) throws {
        let current = try exportedCounter(db)
        guard try localReplica(db).id == replica, counter > current else { return }
        if let old = try exportMark(db) { mac.toggle(IntegrityTerm.exportMark(old.replica, counter: old.counter)) }
        mac.toggle(IntegrityTerm.exportMark(replica, counter: counter))
        try db.execute(
            sql: """
                INSERT INTO localExport (singleton, replicaId, counter) VALUES (1, ?, ?)
                ON CONFLICT(singleton) DO UPDATE SET replicaId = excluded.replicaId, counter = excluded.counter
                """,
            arguments: [Data(replica.bytes), Int64(counter)])
    }

    /// The private writer of a local-only item, if it has one.
    public static func localOnlyWriter(_ db: Database, item: ItemID) throws -> ReplicaID? {
        let stmt = try db.cachedStatement(sql: "SELECT replicaId FROM localOnlyWriter WHERE itemId = ?")
        guard let row = try Row.fetchOne(stmt, arguments: [Data(item.bytes)]) else { return nil }
        guard let id = ReplicaID(bytes: try row.blob(at: 0, name: "localOnlyWriter.replicaId", length: 16)) else {
            throw StoreError.damaged("replica id of wrong length in localOnlyWriter")
        }
        return id
    }

    /// Gives a local-only item a (new) private writer (keeping the MAC).
    public static func setLocalOnlyWriter(_ db: Database, item: ItemID, replica: ReplicaID, mac: VaultMAC) throws {
        if let old = try localOnlyWriter(db, item: item) { mac.toggle(IntegrityTerm.privateWriter(item: item, writer: old)) }
        mac.toggle(IntegrityTerm.privateWriter(item: item, writer: replica))
        try db.execute(
            sql: "INSERT OR REPLACE INTO localOnlyWriter (itemId, replicaId) VALUES (?, ?)",
            arguments: [Data(item.bytes), Data(replica.bytes)])
    }

    /// Forgets an item's private writer (the item syncs again; keeping
    /// the MAC).
    public static func removeLocalOnlyWriter(_ db: Database, item: ItemID, mac: VaultMAC) throws {
        guard let old = try localOnlyWriter(db, item: item) else { return }
        mac.toggle(IntegrityTerm.privateWriter(item: item, writer: old))
        try db.execute(sql: "DELETE FROM localOnlyWriter WHERE itemId = ?", arguments: [Data(item.bytes)])
    }

    /// Every item that has a private writer.
    public static func localOnlyWriterItems(_ db: Database) throws -> [ItemID] {
        try localOnlyWriters(db).map(\.item)
    }

    /// Every row of `localOnlyWriter`, by item id.
    public static func localOnlyWriters(_ db: Database) throws -> [(item: ItemID, writer: ReplicaID)] {
        try Row.fetchAll(db, sql: "SELECT itemId, replicaId FROM localOnlyWriter ORDER BY itemId").map { row in
            guard let item = ItemID(bytes: try row.blob(at: 0, name: "localOnlyWriter.itemId", length: 16)),
                let writer = ReplicaID(bytes: try row.blob(at: 1, name: "localOnlyWriter.replicaId", length: 16))
            else { throw StoreError.damaged("an identifier of wrong length in localOnlyWriter") }
            return (item, writer)
        }
    }

    /// Takes the next dot of `replica` (a private writer): one above the
    /// highest counter seen from it, recorded in the summary.
    public static func nextDot(_ db: Database, replica: ReplicaID, mac: VaultMAC) throws -> Dot {
        let seen = try replicaCounter(db, replica) ?? 0
        guard seen < UInt64(StoredLimits.maxCounter) else { throw StoreError.damaged("a private writer's counter is at its limit") }
        let next = seen + 1
        try raiseReplica(db, replica, to: next, at: nil, mac: mac)
        return Dot(replica: replica, counter: next)
    }

    /// Sets the highest counter seen from `replica` (lowered or raised),
    /// keeping the MAC.
    public static func setSeen(_ db: Database, replica: ReplicaID, counter: UInt64, mac: VaultMAC) throws {
        let old = try replicaCounter(db, replica)
        if old == counter { return }
        if let old { mac.toggle(IntegrityTerm.replica(replica, counter: old)) }
        mac.toggle(IntegrityTerm.replica(replica, counter: counter))
        try db.execute(
            sql: """
                INSERT INTO replica (replicaId, counter) VALUES (?, ?)
                ON CONFLICT(replicaId) DO UPDATE SET counter = excluded.counter
                """,
            arguments: [Data(replica.bytes), Int64(counter)])
    }

    /// Sets the local replica's counter (after ``setLocalReplica``),
    /// keeping where it is bound and the MAC.
    public static func renumberLocalReplica(_ db: Database, id: ReplicaID, counter: UInt64, mac: VaultMAC) throws {
        let old = try localReplica(db)
        mac.toggle(IntegrityTerm.local(old.id, counter: old.counter))
        mac.toggle(IntegrityTerm.local(id, counter: counter))
        try db.execute(
            sql: "UPDATE localReplica SET replicaId = ?, counter = ? WHERE singleton = 1",
            arguments: [Data(id.bytes), Int64(counter)])
        try setSeen(db, replica: id, counter: counter, mac: mac)
    }

    /// Items holding a current version written by `replica` with a counter
    /// above `counter`.
    public static func itemsWithVersions(_ db: Database, replica: ReplicaID, above counter: UInt64) throws -> [ItemID] {
        try Data.fetchAll(
            db, sql: "SELECT DISTINCT itemId FROM fieldVersion WHERE replicaId = ? AND counter > ? ORDER BY itemId",
            arguments: [Data(replica.bytes), Int64(counter)]
        ).compactMap { ItemID(bytes: $0) }
    }
}
