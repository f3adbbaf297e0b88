import CofferBenchSupport
import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// The bulk path of imports into a vault without items (clone, first
/// import): rows inserted in batches, the secondary indexes dropped and
/// rebuilt inside the transaction, records decoded on a second thread.
@Suite("bundles: bulk load into an empty vault (library)")
struct BundleBulkLoadTests {
    static func schema(_ v: Vault) throws -> [String] {
        try v.store.read { db in try Queries.schemaSQL(db) }
    }

    /// An empty replica of `a` (a clone of its empty bundle), before `a`
    /// gets items.
    static func emptyReplica(of a: Vault, in box: BundleSandbox, name: String) throws -> Vault {
        try a.exportBundle(to: box.path("\(name).empty.cb"))
        _ = try Vault.clone(bundleAt: box.path("\(name).empty.cb"), to: box.path(name), passphrase: box.passphrase)
        return try VaultFile.open(path: box.path(name)).unlock(passphrase: box.passphrase)
    }

    @Test func loadsManyBatchesAndRebuildsTheIndexes() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        let b = try Self.emptyReplica(of: a, in: box, name: "b.coffer")
        // More items than one batch of records (64), one item statement
        // (64) and one version statement (256), plus deletes, conflicts
        // and local-only items that stay home.
        try a._bulkAddForBenchmarks(count: 300)
        try a.add(apiKey("svc/conflict", "one"))
        try a.add(apiKey("home/private", "sk-local", policy: .localOnly))
        try a.delete("bench/item-7")
        let fresh = try Self.schema(a)

        try a.exportBundle(to: box.path("full.cb"))
        let cloned = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        #expect(cloned.added == 301 && cloned.records == 301 && cloned.changed == 0)
        // 5 versions per generated item, 3 for svc/conflict (name, type,
        // key), 1 delete marker.
        #expect(cloned.versionsAdded == 300 * 5 + 3 + 1)
        let c = try VaultFile.open(path: box.path("c.coffer")).unlock(passphrase: box.passphrase)
        #expect(try Self.schema(c) == fresh)
        #expect(try c.item(named: "bench/item-299").field("key") != nil) // name hashes are right
        #expect(try !c.contains("bench/item-7"))
        #expect(try !c.contains("home/private"))

        let imported = try b.importBundle(at: box.path("full.cb"))
        #expect(imported.added == 301 && imported.touchedItems.count == 301)
        #expect(imported.touchedItems == imported.touchedItems.sorted())
        #expect(try Self.schema(b) == fresh)
        #expect(try BundleSandbox.dump(b) == BundleSandbox.dump(c))
        #expect(try b.list().count == 300)

        // Concurrent edits on b and a, then a's delta into b: the merge
        // path (b has items now) opens a conflict.
        try a.edit("svc/conflict", ItemEdit(setFields: [Field(name: "key", value: "from a", isSecret: true)]))
        try b.edit("svc/conflict", ItemEdit(setFields: [Field(name: "key", value: "from b", isSecret: true)]))
        try a.exportBundle(to: box.path("full2.cb"))
        let merged = try b.importBundle(at: box.path("full2.cb"))
        #expect(merged.changed == 1 && merged.conflictsOpened == 1 && merged.added == 0)
    }

    @Test func aFailedLoadLeavesTheVaultAndItsIndexesAsTheyWere() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        let b = try Self.emptyReplica(of: a, in: box, name: "b.coffer")
        try a._bulkAddForBenchmarks(count: 400)
        try a.exportBundle(to: box.path("full.cb"))
        let schema = try Self.schema(b)
        let before = try BundleSandbox.dump(b)
        // Damage the last chunk: the records before it are already
        // written (and the indexes dropped) when the error surfaces.
        var bytes = box.bytes("full.cb")
        bytes[bytes.count - 20] ^= 0x01
        box.write("bad.cb", bytes)
        #expect(throws: CofferError.self) { try b.importBundle(at: box.path("bad.cb")) }
        #expect(try Self.schema(b) == schema)
        #expect(try BundleSandbox.dump(b) == before)
        #expect(throws: CofferError.self) {
            _ = try Vault.clone(bundleAt: box.path("bad.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        }
        #expect(!FileManager.default.fileExists(atPath: box.path("c.coffer")))
        // And the intact bundle still loads.
        #expect(try b.importBundle(at: box.path("full.cb")).added == 400)
    }
}
