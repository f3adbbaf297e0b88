import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// Issue 24 item 10: a replica whose clock ran a day or more fast writes
/// versions the others refuse (docs/bundle-format.md §Validation rules,
/// `future-bundle` and `written-after-bundle`). Once its clock is right
/// again it re-stamps them — same values, a new dot, the current time — on
/// its next sync (or write), says so, and sync resumes. A far-future time
/// in someone else's bundle is still refused.
///
/// The fast clock is the task-local ``Clock/offsetMillis``: the same code
/// runs, with this test's task seeing a clock three days ahead.
@Suite("sync: a replica whose clock ran fast heals itself")
struct ClockHealTests {
    static let day: Int64 = 86_400_000

    static func open(_ box: BundleSandbox, _ name: String) throws -> Vault {
        try VaultFile.open(path: box.path(name)).unlock(passphrase: box.passphrase)
    }

    static func edit(_ v: Vault, _ name: String, _ value: String) throws {
        var e = ItemEdit()
        e.setFields = [Field(name: "key", value: value, isSecret: true)]
        try v.edit(name, e)
    }

    static func secret(_ v: Vault, _ name: String) throws -> String? {
        try v.item(named: name).field("key")?.value
    }

    /// Replicas A and B of one vault syncing through `dir`.
    static func twoReplicas(_ box: BundleSandbox) throws -> (Vault, Vault, String) {
        let a = try box.newVault("a.coffer")
        try a.add(apiKey("shared", "v1"))
        try a.add(apiKey("other", "o1"))
        let dir = box.path("sync")
        try Vault.createSyncFolder(dir)
        _ = try a.sync(dir: dir)
        _ = try Vault.clone(
            bundleAt: dir + "/" + Vault.segmentFileName(replica: try a.replicaID(), first: 0, last: 1), to: box.path("b.coffer"), passphrase: box.passphrase)
        return (a, try open(box, "b.coffer"), dir)
    }

    @Test func aReplicaWhoseClockRanFastIsAcceptedAgainOnceItSyncs() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.twoReplicas(box)
        let fastSince = Clock.nowMillis() + 3 * Self.day
        // A's clock runs three days fast: it adds, edits and deletes, and
        // syncs (its bundle is dated three days ahead).
        try Clock.$offsetMillis.withValue(3 * Self.day) {
            try a.add(apiKey("fast/new", "made-fast"))
            try Self.edit(a, "shared", "v2")
            try a.add(apiKey("fast/gone", "x"))
            try a.delete("fast/gone")
            let r = try a.sync(dir: dir)
            #expect(r.restamped == nil, "its own clock looks right to itself")
            #expect(r.wroteOwnBundle)
        }
        // B (an honest clock) refuses it: nothing of it merges.
        let refused = try b.sync(dir: dir)
        #expect(refused.failed.count == 1)
        #expect(refused.failed.first?.error.message.contains("future-bundle") == true, "\(refused.failed)")
        #expect(try b.contains("fast/new") == false)
        #expect(try Self.secret(b, "shared") == "v1")

        // A's clock is right again: its next sync re-stamps its far-future
        // versions (same values) and writes a bundle B accepts.
        let before = try RekeyTests.logical(a)
        let healed = try a.sync(dir: dir)
        let restamp = try #require(healed.restamped)
        // fast/new: @name, @type, key; shared: key; fast/gone: @name,
        // @type, key and its delete marker (still deleted after).
        #expect(restamp.versions == 8, "\(restamp)")
        #expect(restamp.items == 3, "\(restamp)")
        #expect(abs(Int64(restamp.since.timeIntervalSince1970 * 1000) - fastSince) < 60_000, "\(restamp)")
        #expect(restamp.message.contains("8 versions of 3 items"), "\(restamp.message)")
        #expect(healed.wroteOwnBundle)
        #expect(try Self.secret(a, "fast/new") == "made-fast")
        #expect(try Self.secret(a, "shared") == "v2")
        #expect(try a.contains("fast/gone") == false)
        #expect(try a.conflicts().isEmpty)
        #expect(try RekeyTests.logical(a) != before, "new dots")
        #expect(try a.verify().isSound)

        let accepted = try b.sync(dir: dir)
        #expect(accepted.failed.isEmpty, "\(accepted.failed)")
        #expect(try Self.secret(b, "fast/new") == "made-fast")
        #expect(try Self.secret(b, "shared") == "v2")
        #expect(try b.contains("fast/gone") == false)
        #expect(try b.conflicts().isEmpty)
        #expect(try b.verify().isSound)
        // Converged; nothing more to re-stamp.
        _ = try a.sync(dir: dir)
        #expect(try RekeyTests.logical(a) == RekeyTests.logical(b))
        #expect(try a.restampFutureWrites(acknowledgedUpTo: 0) == nil)
    }

    /// Without a sync, the next write re-stamps (the CLI calls this before
    /// every write, as it checks the replica id); a value written
    /// concurrently on B stays a conflict with both sides.
    @Test func theNextWriteRestampsAndKeepsConcurrentSides() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.twoReplicas(box)
        try Clock.$offsetMillis.withValue(2 * Self.day) {
            try Self.edit(a, "shared", "from-fast-a")
        }
        try Self.edit(b, "shared", "from-b")
        // The cheap check every write makes finds the newest own version.
        let restamp = try #require(try a.restampFutureWrites())
        #expect(restamp.versions == 1 && restamp.items == 1, "\(restamp)")
        #expect(try a.restampFutureWrites() == nil)
        try a.add(apiKey("later", "l1"))
        _ = try a.sync(dir: dir)
        let rb = try b.sync(dir: dir)
        #expect(rb.failed.isEmpty, "\(rb.failed)")
        _ = try a.sync(dir: dir)
        let sides = try b.item(named: "shared").conflicts.flatMap { $0.sides.compactMap(\.value) }.sorted()
        #expect(sides == ["from-b", "from-fast-a"], "\(sides)")
        #expect(try RekeyTests.logical(a) == RekeyTests.logical(b))
        #expect(try Self.secret(b, "later") == "l1")
    }

    /// The protection stays: a key holder's far-future write is refused by
    /// every receiver, healed or not, and re-stamping never touches another
    /// replica's versions.
    @Test func aHostileFarFutureBundleIsStillRefused() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.twoReplicas(box)
        let forge = BundleForge(vault: a)
        let m = ReplicaID.random()
        let now = Clock.nowMillis()
        let shared = try a.item(named: "shared").id
        let held = try a.state(of: "shared").registers[forge.field("key", of: shared)]!.first!
        let far = forge.keyWrite(
            shared, "secret-far", dot: Dot(replica: m, counter: 1), vector: VersionVector([m: 1, held.dot.replica: held.dot.counter]), at: now + 3 * Self.day)
        let before = try BundleSandbox.dump(b)
        for (createdAt, rule) in [(now, "written-after-bundle"), (now + 3 * Self.day, "future-bundle")] {
            let bytes = try forge.bundle(replica: m, createdAt: createdAt, summary: VersionVector([m: 1, held.dot.replica: held.dot.counter]), writes: [far])
            box.write("forged.cb", bytes)
            do {
                _ = try b.importBundle(at: box.path("forged.cb"))
                Issue.record("a far-future write was accepted (\(rule))")
            } catch {
                #expect(error.exitCode == 65 && error.message.contains(rule), "\(error.message)")
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dir + "/\(m.hex).coffer-bundle"))
            let r = try b.sync(dir: dir)
            #expect(r.failed.count == 1 && r.failed.first?.error.message.contains(rule) == true, "\(r.failed)")
        }
        #expect(try BundleSandbox.dump(b) == before)
        #expect(try b.restampFutureWrites(acknowledgedUpTo: 0) == nil)
    }
}
