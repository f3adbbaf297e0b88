import CofferSync
import Foundation
import GRDB

extension Queries {
    /// Every current version of every live item, in one pass over the
    /// table (for `coffer audit`, which reads every secret). Versions of
    /// each register are sorted by dot, as ``itemState(_:id:)`` returns them.
    public static func statesOfLiveItems(_ db: Database) throws -> [ItemID: ItemState] {
        var out: [ItemID: ItemState] = [:]
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT fieldVersion.* FROM fieldVersion JOIN item ON item.itemId = fieldVersion.itemId
                WHERE item.isDeleted = 0
                """)
        while let row = try rows.next() {
            guard let item = ItemID(bytes: row["itemId"] as Data), let rid = RegisterID(bytes: row["registerId"] as Data)
            else { continue }
            out[item, default: ItemState(id: item)].registers[rid, default: []].append(try FieldVersion(row: row))
        }
        for (id, state) in out where state.registers.values.contains(where: { $0.count > 1 }) {
            var sorted = state
            for (rid, versions) in state.registers where versions.count > 1 {
                sorted.registers[rid] = versions.sorted { $0.dot < $1.dot }
            }
            out[id] = sorted
        }
        return out
    }
}
