import CofferSync
import Foundation
import GRDB

/// The open vault database inside a read or write transaction, as
/// CofferKit sees it: a handle it passes to ``Queries`` and never runs SQL
/// on. CofferKit does not import GRDB (scripts/check-layers.sh); every
/// statement lives in CofferStore and reads its rows through SafeRow.
public typealias StoreConnection = GRDB.Database

/// The queries CofferKit's components run that belong to no other table's
/// file: conflicts, the replica binding, the format number, change
/// watching, and the bulk-write set-up shared by bundle imports and file
/// imports.
extension Queries {
    /// SQLite's `data_version`: changes when another connection commits.
    public static func dataVersion(_ db: Database) throws -> Int {
        guard let row = try Row.fetchOne(db, sql: "PRAGMA data_version") else { return 0 }
        return Int(try row.int64(at: 0, name: "data_version"))
    }

    /// The ids of the live items whose `hasConflict` column is set.
    public static func conflictedItemIDs(_ db: Database) throws -> [ItemID] {
        try Row.fetchAll(db, sql: "SELECT itemId FROM item WHERE isDeleted = 0 AND hasConflict = 1").map { row in
            guard let id = ItemID(bytes: Array(try row.blob(at: 0, name: "item.itemId", length: 16))) else {
                throw StoreError.damaged("item.itemId of wrong length")
            }
            return id
        }
    }

    /// The name hashes carried by more than one live item (a name clash
    /// after concurrent adds on two replicas).
    public static func sharedNameHashes(_ db: Database) throws -> [[UInt8]] {
        try Row.fetchAll(
            db, sql: "SELECT nameHash FROM item WHERE isDeleted = 0 AND nameHash IS NOT NULL GROUP BY nameHash HAVING count(*) > 1"
        ).map { row in Array(try row.blob(at: 0, name: "item.nameHash")) }
    }

    /// Binds the local replica to this machine and file (a replica never
    /// bound, which only a hand-edited file has).
    public static func bindLocalReplica(_ db: Database, host: String?, inode: Int64?) throws {
        try db.execute(
            sql: "UPDATE localReplica SET boundHost = ?, boundInode = ? WHERE singleton = 1", arguments: [host, inode])
    }

    /// Runs `action` once the current write transaction commits (never on
    /// a rollback).
    public static func onCommit(_ db: Database, _ action: @escaping @Sendable () -> Void) {
        db.afterNextTransaction(onCommit: { _ in action() })
    }

    /// The set-up of a large write (a bundle import, a file import), around
    /// `body`, inside its write transaction.
    ///
    /// A large write dirties many pages inside one transaction. Into a
    /// vault with items the dot and name indexes are written in random
    /// order: a 64 MiB page cache (instead of 2 MiB) keeps them in memory.
    /// Into a vault without items (a clone, a first import) rows are
    /// appended in key order and ``bulkLoadIndexes`` are dropped and built
    /// once at the end: 16 MiB is as fast and keeps the peak RSS low
    /// (docs/benchmarks-bundles.md). Inside the transaction, so a failure
    /// brings the indexes back with everything else. `body` is told
    /// whether the vault held no item.
    public static func bulkWrite<T>(_ db: Database, _ body: (_ intoEmptyVault: Bool) throws -> T) throws -> T {
        let empty = try holdsNoItems(db)
        try db.execute(sql: empty ? "PRAGMA cache_size = -16384" : "PRAGMA cache_size = -65536")
        defer { try? db.execute(sql: "PRAGMA cache_size = -2000") }
        let rebuild = empty ? try dropBulkLoadIndexes(db) : []
        let result = try body(empty)
        try createIndexes(db, rebuild)
        return result
    }
}
