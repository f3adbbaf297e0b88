import CofferSync
import Foundation
import GRDB

/// Counters for a bulk local write (an import of another tool's file):
/// the same effect as ``Queries/nextDot(_:)`` called once per write, with
/// the counter kept in memory and stored once at the end.
extension Queries {
    /// The local replica and its current counter.
    public static func localCounter(_ db: Database) throws -> Dot {
        let local = try localReplica(db)
        return Dot(replica: local.id, counter: local.counter)
    }

    /// Records `dot` as the local replica's latest write (what the last of
    /// a run of ``nextDot(_:)`` calls would have left).
    public static func storeLocalCounter(_ db: Database, _ dot: Dot, mac: VaultMAC) throws {
        let local = try localReplica(db)
        guard local.id == dot.replica, dot.counter <= UInt64(StoredLimits.maxCounter) else {
            throw StoreError.database("the local counter moved to another replica id during the import")
        }
        mac.toggle(IntegrityTerm.local(local.id, counter: local.counter))
        mac.toggle(IntegrityTerm.local(local.id, counter: dot.counter))
        try db.execute(sql: "UPDATE localReplica SET counter = ? WHERE singleton = 1", arguments: [Int64(dot.counter)])
        try raiseReplica(db, dot.replica, to: dot.counter, at: nil, mac: mac)
    }
}
