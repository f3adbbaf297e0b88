import CofferSync
import Foundation
import GRDB

/// Bookkeeping for restored vault files and local-only items
/// (docs/sync.md, "Restored vault files" and "Local-only items").
extension Queries {
    /// The highest counter of the local replica id that this file has put
    /// in a bundle; 0 when it never exported under its current id.
    public static func exportedCounter(_ db: Database) throws -> UInt64 {
        let local = try localReplica(db)
        guard let row = try Row.fetchOne(db, sql: "SELECT replicaId, counter FROM localExport WHERE singleton = 1"),
            ReplicaID(bytes: row["replicaId"] as Data) == local.id
        else { return 0 }
        return UInt64(max(0, row["counter"] as Int64))
    }

    /// Records that a bundle holding every write of `replica` up to
    /// `counter` was written.
    public static func noteExported(_ db: Database, replica: ReplicaID, counter: UInt64) throws {
        let current = try exportedCounter(db)
        guard try localReplica(db).id == replica, counter > current else { return }
        try db.execute(
            sql: """
                INSERT INTO localExport (singleton, replicaId, counter) VALUES (1, ?, ?)
                ON CONFLICT(singleton) DO UPDATE SET replicaId = excluded.replicaId, counter = excluded.counter
                """,
            arguments: [Data(replica.bytes), Int64(counter)])
    }

    /// The private writer of a local-only item, if it has one.
    public static func localOnlyWriter(_ db: Database, item: ItemID) throws -> ReplicaID? {
        guard let data = try Data.fetchOne(db, sql: "SELECT replicaId FROM localOnlyWriter WHERE itemId = ?", arguments: [Data(item.bytes)])
        else { return nil }
        return ReplicaID(bytes: data)
    }

    /// Gives a local-only item a (new) private writer.
    public static func setLocalOnlyWriter(_ db: Database, item: ItemID, replica: ReplicaID) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO localOnlyWriter (itemId, replicaId) VALUES (?, ?)",
            arguments: [Data(item.bytes), Data(replica.bytes)])
    }

    /// Forgets an item's private writer (the item syncs again).
    public static func removeLocalOnlyWriter(_ db: Database, item: ItemID) throws {
        try db.execute(sql: "DELETE FROM localOnlyWriter WHERE itemId = ?", arguments: [Data(item.bytes)])
    }

    /// Every item that has a private writer.
    public static func localOnlyWriterItems(_ db: Database) throws -> [ItemID] {
        try Data.fetchAll(db, sql: "SELECT itemId FROM localOnlyWriter ORDER BY itemId").compactMap { ItemID(bytes: $0) }
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
