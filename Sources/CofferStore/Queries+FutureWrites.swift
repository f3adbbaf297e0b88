import CofferSync
import Foundation
import GRDB

/// Finding this replica's versions dated beyond what other replicas accept
/// (a machine whose clock ran fast: docs/sync.md, "A clock that ran fast").
extension Queries {
    /// The write time of this replica's newest current version (the highest
    /// counter of `replica` in fieldVersion), or nil when it has none. One
    /// seek in the `fieldVersion_dot` index and one in the table: what every
    /// write pays to notice that the clock ran fast since its last write.
    public static func newestWriteTime(_ db: Database, replica: ReplicaID) throws -> Int64? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT writtenAt FROM fieldVersion WHERE replicaId = ? ORDER BY counter DESC LIMIT 1",
                arguments: [Data(replica.bytes)])
        else { return nil }
        return try row.int64("writtenAt", table: "fieldVersion")
    }

    /// Items holding a current version of `replica` with a counter above
    /// `counter`, written after `time`: a range of the `fieldVersion_dot`
    /// index (the whole of `replica`'s versions when `counter` is 0).
    public static func itemsWithVersions(_ db: Database, replica: ReplicaID, above counter: UInt64, writtenAfter time: Int64) throws -> [ItemID] {
        try Data.fetchAll(
            db, sql: "SELECT DISTINCT itemId FROM fieldVersion WHERE replicaId = ? AND counter > ? AND writtenAt > ? ORDER BY itemId",
            arguments: [Data(replica.bytes), Int64(clamping: counter), time]
        ).compactMap { ItemID(bytes: $0) }
    }
}
