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
    /// The vault MAC follows both rows, as for ``nextDot(_:mac:)``.
    public static func storeLocalCounter(_ db: Database, _ dot: Dot, mac: VaultMAC) throws {
        let local = try localReplica(db)
        guard local.id == dot.replica, dot.counter >= local.counter else {
            throw StoreError.damaged("a bulk write's counter is behind the local replica's")
        }
        guard dot.counter <= UInt64(StoredLimits.maxCounter) else {
            throw StoreError.damaged("the local replica's counter is at its limit")
        }
        mac.toggle(IntegrityTerm.local(local.id, counter: local.counter))
        mac.toggle(IntegrityTerm.local(local.id, counter: dot.counter))
        try db.execute(sql: "UPDATE localReplica SET counter = ? WHERE singleton = 1", arguments: [Int64(dot.counter)])
        try raiseReplica(db, local.id, to: dot.counter, at: nil, mac: mac)
    }
}
