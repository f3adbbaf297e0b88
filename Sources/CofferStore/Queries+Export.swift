import CofferSync
import Foundation
import GRDB

/// One item as stored, for a read of the whole vault (an export): its
/// row, its sealed record, its current versions and, when asked for, its
/// superseded ones.
public struct StoredItem: Sendable {
    public var row: ItemRow
    public var record: [UInt8]?
    public var state: ItemState
    /// Superseded versions (``Queries/history(_:item:)``'s, in no order).
    public var history: [(register: RegisterID, version: FieldVersion)]
}

extension Queries {
    /// Every live item with its record, current versions and (with
    /// `history`) superseded versions, in item id order: one pass over
    /// `item`, `fieldVersion` and `fieldHistory` each, merged on the item
    /// id (every table's key starts with it), instead of three or four
    /// look-ups per item. Versions of items without a row are skipped;
    /// versions of each register are sorted by dot, as
    /// ``itemState(_:id:)`` returns them.
    public static func forEachStoredItem(_ db: Database, history: Bool, _ body: (StoredItem) throws -> Void) throws {
        let items = try Row.fetchCursor(
            db, sql: "SELECT itemId, policy, nameHash, isDeleted, hasConflict, createdAt, updatedAt, record FROM item ORDER BY itemId")
        let versions = VersionCursor(
            try Row.fetchCursor(
                db,
                sql: "SELECT itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload FROM fieldVersion ORDER BY itemId"
            ), table: "fieldVersion")
        let superseded =
            history
            ? VersionCursor(
                try Row.fetchCursor(
                    db,
                    sql:
                        "SELECT itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload FROM fieldHistory ORDER BY itemId"
                ), table: "fieldHistory") : nil
        while let row = try items.next() {
            let item = try positionalItemRow(row)
            let record = try row.optionalBlob(at: 7, name: "item.record").map { Array($0) }
            var state = ItemState(id: item.id)
            try versions.take(item.id) { rid, v in state.registers[rid, default: []].append(v) }
            var old: [(register: RegisterID, version: FieldVersion)] = []
            try superseded?.take(item.id) { rid, v in old.append((rid, v)) }
            guard !item.isDeleted else { continue }
            for (k, list) in state.registers where list.count > 1 { state.registers[k] = list.sorted { $0.dot < $1.dot } }
            try body(StoredItem(row: item, record: record, state: state, history: old))
        }
    }

    /// An `item` row from columns itemId, policy, nameHash, isDeleted,
    /// hasConflict, createdAt, updatedAt.
    static func positionalItemRow(_ row: Row) throws -> ItemRow {
        guard let id = ItemID(bytes: try row.blob(at: 0, name: "item.itemId", length: 16)) else {
            throw StoreError.damaged("item id of wrong length")
        }
        guard let policy = SyncPolicy(rawValue: try row.text(at: 1, name: "item.policy")) else {
            throw StoreError.damaged("item.policy holds an unknown policy")
        }
        let hash = try row.optionalBlob(at: 2, name: "item.nameHash")
        if let hash, hash.count != 32 { throw StoreError.damaged("item.nameHash has \(hash.count) bytes instead of 32") }
        return ItemRow(
            id: id, policy: policy, nameHash: hash.map { Array($0) }, isDeleted: try row.bool(at: 3, name: "item.isDeleted"),
            hasConflict: try row.bool(at: 4, name: "item.hasConflict"), createdAt: try row.int64(at: 5, name: "item.createdAt"),
            updatedAt: try row.int64(at: 6, name: "item.updatedAt"))
    }
}

/// A cursor over version rows (itemId, registerId, then
/// ``Queries/positionalVersion(_:from:table:)``'s columns) in item id
/// order, read one item at a time.
private final class VersionCursor {
    let rows: RowCursor
    let table: String
    /// The first row of the next item, already read.
    var pending: (item: ItemID, register: RegisterID, version: FieldVersion)?
    var done = false

    init(_ rows: RowCursor, table: String) {
        self.rows = rows
        self.table = table
    }

    /// Hands over the versions of `item` (skipping those of items before
    /// it, which have no row or were passed over).
    func take(_ item: ItemID, _ body: (RegisterID, FieldVersion) -> Void) throws {
        while true {
            if pending == nil {
                guard !done else { return }
                guard let row = try rows.next() else {
                    done = true
                    return
                }
                guard let id = ItemID(bytes: try row.blob(at: 0, name: "\(table).itemId", length: 16)),
                    let rid = RegisterID(bytes: try row.blob(at: 1, name: "\(table).registerId", length: 16))
                else { throw StoreError.damaged("\(table) holds an id of wrong length") }
                pending = (id, rid, try Queries.positionalVersion(row, from: 2, table: table))
            }
            guard let p = pending else { return }
            if p.item > item { return }
            if p.item == item { body(p.register, p.version) }
            pending = nil
        }
    }
}
