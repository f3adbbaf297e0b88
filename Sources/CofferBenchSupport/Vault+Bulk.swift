import CofferCrypto
import CofferKit
import CofferStore
import CofferSync
import Foundation
import GRDB

extension Vault {
    /// Adds `count` generated API-key items (`bench/item-N`, a 40-character
    /// key, a tag and a source) in one transaction. Only for building large
    /// vaults for benchmarks and tests (`coffer dev-fill`, hidden): it skips
    /// the duplicate-name check of ``add(_:)`` and inserts rows directly
    /// (``Queries/insertNewItem(_:row:state:)``: the ids are new).
    public func _bulkAddForBenchmarks(count: Int, prefix: String = "bench/item-") throws(CofferError) {
        try CofferError.wrap {
            try write { db, mac in
                // Each item seals 5 payloads and derives 2 ids: keep the
                // keys readable meanwhile (no mprotect per use).
                try keys.item.keepingReadable {
                    try keys.nameIndex.keepingReadable {
                        try keys.fieldID.keepingReadable {
                            try keys.record.keepingReadable {
                                try mac.keepingReadable {
                                    for i in 0..<count { try addGenerated(db, name: "\(prefix)\(i)", mac: mac) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func addGenerated(_ db: Database, name: String, mac: VaultMAC) throws {
        let id = ItemID.random()
        let dot = try Queries.nextDot(db, mac: mac)
        let now = Clock.nowMillis()
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
        var shown: [RegisterID: FieldPayload] = [:]
        for c in changes { shown[c.register] = c.payload }
        try Queries.insertNewItem(db, row: row, record: try sealRecord(state: state, row: row, shown: shown), state: state, mac: mac)
    }
}
