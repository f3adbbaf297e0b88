import CofferCrypto
import CofferStore
import CofferSync
import Foundation

extension Vault {
    /// Adds `count` generated API-key items (`bench/item-N`, a 40-character
    /// key, a tag and a source) in one transaction. Only for building large
    /// vaults for benchmarks and tests (`coffer dev-fill`, hidden): it skips
    /// the duplicate-name check of ``add(_:)``.
    public func _bulkAddForBenchmarks(count: Int, prefix: String = "bench/item-") throws(CofferError) {
        try CofferError.wrap {
            try store.writeImmediate { db in
                for i in 0..<count {
                    let id = ItemID.random()
                    let dot = try Queries.nextDot(db)
                    let now = Clock.nowMillis()
                    let name = "\(prefix)\(i)"
                    let key = "sk-" + Hex.encode(Random.bytes(20)).prefix(37)
                    let changes = [
                        Change(register: .name, payload: FieldPayload(name: "@name", value: Array(name.utf8), isSecret: false), tombstone: false),
                        Change(register: .type, payload: FieldPayload(name: "@type", value: Array(ItemType.apiKey.rawValue.utf8), isSecret: false), tombstone: false),
                        Change(register: .tags, payload: FieldPayload(name: "@tags", value: Array("bench".utf8), isSecret: false), tombstone: false),
                        Change(register: .source, payload: FieldPayload(name: "@source", value: Array("openai".utf8), isSecret: false), tombstone: false),
                        Change(register: registerID(field: "key", item: id), payload: FieldPayload(name: "key", value: Array(key.utf8), isSecret: true), tombstone: false),
                    ]
                    var state = ItemState(id: id)
                    apply(changes, to: &state, dot: dot, at: now)
                    let row = try derivedRow(for: state, policy: .sync, createdAt: now, updatedAt: now)
                    try Queries.saveItem(db, row: row, old: nil, new: state, now: now)
                }
            }
        }
    }
}
