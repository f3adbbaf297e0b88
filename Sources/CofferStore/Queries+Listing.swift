import CofferSync
import Foundation
import GRDB

/// The listing hot path (`coffer ls`, `Vault.list()`, lookups by source):
/// every item row with its sealed record (one column of the row since
/// vault format 6), read with direct SQLite calls (``ReadConnection``) in
/// one sequential scan instead of GRDB rows. At 10,000 items GRDB's
/// generic row decoding cost more than the rest of the listing
/// (docs/benchmarks.md).
extension Queries {
    public static func listedItems(_ db: Database) throws -> [ListedItem] { try listedItems(ReadConnection(db)) }

    public static func listedItems(_ db: ReadConnection) throws -> [ListedItem] {
        try listed(db, "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record FROM item ORDER BY itemId")
    }

    /// These items' rows and records (a write's changed items, for the
    /// listing cache's delta), in id order; ids without a row are left out.
    public static func listedItems(_ db: Database, ids: [ItemID]) throws -> [ListedItem] {
        guard !ids.isEmpty else { return [] }
        // Literals made here from 16-byte ids, never from input text.
        let hex = ids.map { "x'\(Hex.encode($0.bytes))'" }
        return try listed(
            ReadConnection(db),
            "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record FROM item WHERE itemId IN (\(hex.joined(separator: ","))) ORDER BY itemId"
        )
    }

    private static func listed(_ db: ReadConnection, _ sql: String) throws -> [ListedItem] {
        var out: [ListedItem] = []
        try db.forEachRow(sql) { s in
            out.append(ListedItem(row: try ItemRow(positional: s), record: try s.optionalBytes(at: 7, name: "item.record")))
        }
        return out
    }
}
