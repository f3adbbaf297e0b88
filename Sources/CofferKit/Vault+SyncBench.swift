import CofferCrypto
import CofferStore
import CofferSync
import Foundation

extension Vault {
    /// Sets field `field` of the items named `<prefix><i>` for `i` in
    /// `range` to a new random value, each as its own write, all in one
    /// transaction. Only for benchmarks (`coffer dev-touch`, hidden).
    /// With `create`, makes the items instead (api-key items with a tag
    /// and a source), skipping the duplicate-name check.
    public func _bulkEditForBenchmarks(range: Range<Int>, prefix: String = "bench/item-", field: String = "key", create: Bool = false) throws(CofferError) {
        try CofferError.wrap {
            try store.writeImmediate { db in
                for i in range {
                    if create {
                        let id = ItemID.random()
                        let now = Clock.nowMillis()
                        let key = "sk-" + Hex.encode(Random.bytes(20))
                        var state = ItemState(id: id)
                        apply([
                            Change(register: .name, payload: FieldPayload(name: "@name", value: Array("\(prefix)\(i)".utf8), isSecret: false), tombstone: false),
                            Change(register: .type, payload: FieldPayload(name: "@type", value: Array(ItemType.apiKey.rawValue.utf8), isSecret: false), tombstone: false),
                            Change(register: .tags, payload: FieldPayload(name: "@tags", value: Array("bench".utf8), isSecret: false), tombstone: false),
                            Change(register: .source, payload: FieldPayload(name: "@source", value: Array("openai".utf8), isSecret: false), tombstone: false),
                            Change(register: registerID(field: field, item: id), payload: FieldPayload(name: field, value: Array(key.utf8), isSecret: true), tombstone: false),
                        ], to: &state, dot: try nextDot(db), at: now)
                        let row = try derivedRow(for: state, policy: .sync, createdAt: now, updatedAt: now)
                        try Queries.saveItem(db, row: row, old: nil, new: state, now: now)
                        continue
                    }
                    let id = try resolve(db, "\(prefix)\(i)")
                    guard let oldRow = try Queries.itemRow(db, id: id) else { continue }
                    let old = try Queries.itemState(db, id: id)
                    var state = old
                    let now = Clock.nowMillis()
                    let value = "sk-" + Hex.encode(Random.bytes(20))
                    apply(
                        [Change(register: registerID(field: field, item: id), payload: FieldPayload(name: field, value: Array(value.utf8), isSecret: true), tombstone: false)],
                        to: &state, dot: try nextDot(db), at: now)
                    let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                    try Queries.saveItem(db, row: row, old: old, new: state, now: now)
                }
            }
        }
    }
}
