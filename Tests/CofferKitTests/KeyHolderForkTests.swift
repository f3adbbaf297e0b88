import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// Issue 24, item 3: a key holder may overwrite, never fork. A version
/// with dot M:1 whose vector claims B:2^40 was accepted by A and C and
/// refused by B (`local-replica-bound`); from then on B refused every
/// bundle of theirs and they ignored B's later edits, for ever. Now B
/// takes a new replica id, moves its writes no bundle carried yet to it
/// (they become conflict sides beside the forged version), and merges:
/// after a few sync rounds every replica shows the same values and the
/// same conflicts, and no honest write is lost (docs/threat-model.md, "A
/// replica that holds the key").
@Suite("a key holder cannot fork two replicas")
struct KeyHolderForkTests {
    struct Fleet {
        let box = BundleSandbox()
        let dir: String
        var a: Vault, b: Vault, c: Vault

        init() throws {
            dir = box.path("sync")
            try Vault.createSyncFolder(dir)
            a = try box.newVault()
            try a.add(apiKey("svc", "base"))
            try a.add(apiKey("other", "o1"))
            _ = try a.sync(dir: dir)
            try a.exportBundle(to: box.path("a.cb"))
            for name in ["b.coffer", "c.coffer"] {
                _ = try Vault.clone(bundleAt: box.path("a.cb"), to: box.path(name), passphrase: box.passphrase)
            }
            b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
            c = try VaultFile.open(path: box.path("c.coffer")).unlock(passphrase: box.passphrase)
            try rounds(1)
        }

        func rounds(_ n: Int) throws {
            for _ in 0..<n {
                for v in [a, b, c] {
                    let r = try v.sync(dir: dir)
                    #expect(r.failed.isEmpty, "\(v.path): \(r.failed.map(\.error.message))")
                }
            }
        }

        /// What a person sees of `name` on each replica: the shown value
        /// and the set of conflict values.
        func seen(_ name: String) throws -> [String] {
            try [a, b, c].map { v in
                let item = try v.item(named: name)
                let shown = item.fields.first { $0.name == "key" }?.value ?? "-"
                let sides = item.conflicts.flatMap { $0.sides.compactMap(\.value) }.sorted()
                return "\(shown) \(sides)"
            }
        }
    }

    func edit(_ v: Vault, _ name: String, _ value: String) throws {
        var e = ItemEdit()
        e.setFields = [Field(name: "key", value: value, isSecret: true)]
        _ = try v.edit(name, e)
    }

    @Test func aForgedClaimOnAReplicaDoesNotForkIt() throws {
        let fleet = try Fleet()
        let (a, b, c) = (fleet.a, fleet.b, fleet.c)
        let oldB = try b.replicaID()
        // B's honest write, published.
        try edit(b, "svc", "b-published")
        try fleet.rounds(2)
        #expect(try fleet.seen("svc") == Array(repeating: "b-published []", count: 3))
        // The forger (a key holder, replica M) overwrites svc claiming
        // 2^40 writes of B, and leaves B out of its summary.
        let forge = BundleForge(vault: a)
        let m = ReplicaID.random()
        let svc = try a.item(named: "svc").id
        let held = try a.state(of: "svc")
        var vector = VersionVector([m: 1, oldB: 1 << 40])
        for versions in held.registers.values { for v in versions { vector = vector.merged(with: v.vector) } }
        vector[oldB] = 1 << 40
        let forged = try forge.bundle(
            replica: m, createdAt: Clock.nowMillis(), summary: VersionVector([m: 1]),
            writes: [forge.keyWrite(svc, "forged", dot: Dot(replica: m, counter: 1), vector: vector, at: Clock.nowMillis())])
        fleet.box.write("sync/m.coffer-bundle", forged)
        // B writes again before it sees the forged file: no bundle carries
        // this write yet.
        try edit(b, "svc", "b-unpublished")
        try fleet.rounds(3)
        // Every replica shows the same; B's unpublished write is a
        // conflict side everywhere, beside the forged value.
        let seen = try fleet.seen("svc")
        #expect(Set(seen).count == 1, "\(seen)")
        #expect(seen[0].contains("b-unpublished") && seen[0].contains("forged"), "\(seen)")
        // B took a new id; its later writes reach everyone.
        #expect(try b.replicaID() != oldB)
        try edit(b, "other", "b-later")
        try edit(b, "svc", "b-settles")
        try fleet.rounds(2)
        #expect(try fleet.seen("other") == Array(repeating: "b-later []", count: 3))
        let settled = try fleet.seen("svc")
        #expect(settled == Array(repeating: "b-settles []", count: 3), "\(settled)")
        // A and C write too; everything converges, every vault verifies.
        try edit(a, "other", "a-later")
        try fleet.rounds(2)
        #expect(try fleet.seen("other") == Array(repeating: "a-later []", count: 3))
        for v in [a, b, c] { #expect(try v.verify().isSound, "\(v.path)") }
    }
}
