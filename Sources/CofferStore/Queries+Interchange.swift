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
    public static func storeLocalCounter(_ db: Database, _ dot: Dot) throws {
        try db.execute(sql: "UPDATE localReplica SET counter = ? WHERE singleton = 1", arguments: [Int64(dot.counter)])
        try db.execute(
            sql: """
                INSERT INTO replica (replicaId, counter) VALUES (?, ?)
                ON CONFLICT(replicaId) DO UPDATE SET counter = max(counter, excluded.counter)
                """,
            arguments: [Data(dot.replica.bytes), Int64(dot.counter)])
    }
}
