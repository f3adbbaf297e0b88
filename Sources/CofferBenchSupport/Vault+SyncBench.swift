import CofferCrypto
import CofferKit
import CofferStore
import CofferSync
import Foundation

extension Vault {
    /// Sets field `field` of the items named `<prefix><i>` for `i` in
    /// `range` to a new random value, each as its own write, all in one
    /// transaction. Only for benchmarks (`coffer dev-touch`, hidden).
    public func _bulkEditForBenchmarks(range: Range<Int>, prefix: String = "bench/item-", field: String = "key") throws(CofferError) {
        try CofferError.wrap {
            try write { db, mac in
                for i in range {
                    let id = try resolve(db, "\(prefix)\(i)")
                    guard let (oldRow, old, _) = try loadItem(db, id: id) else { continue }
                    var state = old
                    let now = Clock.nowMillis()
                    let value = "sk-" + Hex.encode(Random.bytes(20))
                    apply(
                        [
                            Change(
                                register: registerID(field: field, item: id), payload: FieldPayload(name: field, value: Array(value.utf8), isSecret: true),
                                tombstone: false)
                        ],
                        to: &state, dot: try identity.nextDot(db, mac), at: now)
                    let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                    try save(db, row: row, old: old, new: state, now: now, mac: mac)
                }
            }
        }
    }
}
