import CofferCrypto
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// The reproductions of issue 12's "hostile or broken bundles", each made
/// as an attacker would: a bundle forged with the vault key
/// (``BundleForge``), correctly encrypted and authenticated, that breaks
/// one validation rule. Each must be refused whole (bad data, exit 65),
/// by `import` and by `import --dry-run`, naming the rule, with the vault
/// unchanged.
@Suite("bundles: hostile bundles are refused by the validation rules")
struct HostileBundleTests {
    static let big: UInt64 = 1 << 63

    /// Vault `a` holding one item, and a forge for its key.
    func setup() throws -> (BundleSandbox, Vault, BundleForge) {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "base"))
        return (box, a, BundleForge(vault: a))
    }

    func newID() -> ItemID { ItemID(bytes: Random.bytes(16))! }
    var now: Int64 { Clock.nowMillis() }

    /// Imports `bytes` as a bundle into `v` (dry run, then for real) and
    /// expects both to be refused under `rule` with nothing changed.
    func expectRefused(_ v: Vault, _ box: BundleSandbox, _ bytes: [UInt8], rule: BundleRule, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = box.path("forged-\(rule.rawValue).cb")
        box.write((path as NSString).lastPathComponent, bytes)
        let before = try BundleSandbox.dump(v)
        for dry in [true, false] {
            do {
                if dry { _ = try v.previewImport(paths: [path]) } else { _ = try v.importBundle(at: path) }
                Issue.record("\(dry ? "dry run" : "import") accepted a bundle breaking \(rule)", sourceLocation: sourceLocation)
            } catch {
                #expect(error.kind == .badData, sourceLocation: sourceLocation)
                #expect(error.exitCode == 65, sourceLocation: sourceLocation)
                #expect(error.message.contains("bundle rule \(rule.rawValue)"), "\(error.message)", sourceLocation: sourceLocation)
                #expect(!error.message.contains("secret-"), sourceLocation: sourceLocation)
            }
        }
        #expect(try BundleSandbox.dump(v) == before, sourceLocation: sourceLocation)
    }

    @Test func counterOf2To63IsRefusedNotATrap() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let dot = Dot(replica: m, counter: Self.big)
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: Self.big]),
            writes: forge.newItem(newID(), name: "evil", secret: "secret-1", dot: dot, at: now))
        try expectRefused(a, box, bytes, rule: .counterRange)
    }

    @Test func syncRefusesTheBundleAndLeavesNoTemporaryFile() throws {
        let (box, a, forge) = try setup()
        let dir = box.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let m = ReplicaID.random()
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: Self.big]),
            writes: forge.newItem(newID(), name: "evil", secret: "secret-1", dot: Dot(replica: m, counter: Self.big), at: now))
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/\(m.hex).coffer-bundle"))
        let before = try BundleSandbox.dump(a)
        let report = try a.sync(dir: dir)
        #expect(report.failed.count == 1)
        #expect(report.failed.first?.error.message.contains("counter-range") == true)
        #expect(try BundleSandbox.dump(a) == before)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(files == [Vault.segmentFileName(replica: try a.replicaID(), first: 0, last: 1), "\(m.hex).coffer-bundle"].sorted())
    }

    @Test func forgedSummaryFileWithHugeCounterIsRefused() throws {
        let (box, a, _) = try setup()
        let s = BundleSummaryFile(vaultID: a.vaultID, replicaID: .random(), createdAt: now, vector: VersionVector([.random(): Self.big]))
        box.write("s.summary", s.encoded)
        #expect {
            try a.readSummary(at: box.path("s.summary"))
        } throws: { ($0 as? CofferError)?.kind == .badData }
        // The largest allowed counter works end to end.
        let ok = BundleSummaryFile(
            vaultID: a.vaultID, replicaID: .random(), createdAt: now, vector: VersionVector([.random(): BundleValidation.maxCounter]))
        box.write("ok.summary", ok.encoded)
        let since = try a.readSummary(at: box.path("ok.summary")).vector
        #expect(try a.exportBundle(to: box.path("d.cb"), since: since).items == 1)
    }

    /// Issue: "dot M:1, vector {R1:2^40}".
    @Test func vectorNotHoldingItsOwnDotIsRefused() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let r1 = try a.replicaID()
        let svc = try a.item(named: "svc").id
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: 1, r1: 1 << 40]),
            writes: [forge.keyWrite(svc, "secret-2", dot: Dot(replica: m, counter: 1), vector: VersionVector([r1: 1 << 40]), at: now)])
        try expectRefused(a, box, bytes, rule: .exactDot)
    }

    @Test func versionAboveTheExporterSummaryIsRefused() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: 3]),
            writes: forge.newItem(newID(), name: "x", secret: "secret-3", dot: Dot(replica: m, counter: 5), at: now))
        try expectRefused(a, box, bytes, rule: .summaryBound)
    }

    @Test func recordWhoseVersionsSupersedeEachOtherIsRefused() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let id = newID()
        var writes = forge.newItem(id, name: "x", secret: "secret-4", dot: Dot(replica: m, counter: 1), at: now)
        writes.append(forge.keyWrite(id, "secret-5", dot: Dot(replica: m, counter: 2), vector: VersionVector([m: 2]), at: now))
        let bytes = try forge.bundle(replica: m, createdAt: now, summary: VersionVector([m: 2]), writes: writes)
        try expectRefused(a, box, bytes, rule: .concurrentVersions)
    }

    /// Issue: "a far-future write time wins the shown value of every
    /// conflict". A version may be at most a day younger than its bundle,
    /// and a bundle at most a day ahead of the receiver's clock.
    @Test func farFutureWriteTimeIsRefused() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let r = try a.replicaID()
        let svc = try a.item(named: "svc").id
        let held = try a.state(of: "svc").registers[forge.field("key", of: svc)]!.first!
        let year3000: Int64 = 32_503_680_000_000
        let concurrent = forge.keyWrite(
            svc, "secret-6", dot: Dot(replica: m, counter: 1), vector: VersionVector([m: 1, r: held.dot.counter - 1]), at: year3000)
        let lying = try forge.bundle(replica: m, createdAt: now, summary: VersionVector([m: 1]), writes: [concurrent])
        try expectRefused(a, box, lying, rule: .writtenAfterBundle)
        let future = try forge.bundle(replica: m, createdAt: year3000, summary: VersionVector([m: 1]), writes: [concurrent])
        try expectRefused(a, box, future, rule: .futureBundle)
        // Within the allowed skew the same write merges, as a conflict.
        var fine = concurrent
        fine.writtenAt = now + 3_600_000
        let ok = try forge.bundle(replica: m, createdAt: now, summary: VersionVector([m: 1]), writes: [fine])
        box.write("ok.cb", ok)
        #expect(try a.importBundle(at: box.path("ok.cb")).conflictsOpened == 1)
    }

    /// A version claiming 2^40 writes of the receiver (rule
    /// local-replica-bound) used to be refused, which forked the vault
    /// for ever (KeyHolderForkTests). The receiver now takes a new replica
    /// id, its writes no bundle carried yet move to it and stay beside the
    /// claiming version as a conflict, and the bundle merges.
    @Test func versionClaimingUnmadeWritesOfTheReceiverRebindsIt() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let r = try a.replicaID()
        let svc = try a.item(named: "svc").id
        // The summary leaves the receiver out (as a legitimate exporter
        // does for replicas whose writes sit in its local-only items).
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: 1]),
            writes: [forge.keyWrite(svc, "secret-7", dot: Dot(replica: m, counter: 1), vector: VersionVector([m: 1, r: 1 << 40]), at: now)])
        box.write("claim.cb", bytes)
        // A dry run changes nothing and refuses nothing.
        let before = try BundleSandbox.dump(a)
        _ = try a.previewImport(paths: [box.path("claim.cb")])
        #expect(try BundleSandbox.dump(a) == before)
        let report = try a.importBundle(at: box.path("claim.cb"))
        let rebinding = try #require(report.rebinding)
        #expect(rebinding.old == r && rebinding.reason == .claimedBeyondCounter(by: m, moved: 1))
        #expect(rebinding.message.contains("claims writes of this replica") && !rebinding.message.contains("secret-"))
        #expect(try a.replicaID() != r)
        // "base" was never in a bundle: it stays, beside the claim.
        let item = try a.item(named: "svc")
        #expect(Set(item.conflicts.flatMap { $0.sides.compactMap(\.value) }) == ["base", "secret-7"], "\(item.conflicts)")
        #expect(try a.verify().isSound)
    }

    @Test func versionsThatWouldSupersedeEachOtherAreRefused() throws {
        let (box, a, forge) = try setup()
        let m = ReplicaID.random()
        let n = ReplicaID.random()
        let id = newID()
        // N's bundle: a new item whose key has seen M:5 (N's summary does
        // not name M, so nothing bounds that entry).
        var first = forge.newItem(id, name: "x", secret: "secret-8", dot: Dot(replica: n, counter: 1), at: now)
        first[2].vector = VersionVector([n: 1, m: 5])
        box.write("n.cb", try forge.bundle(replica: n, createdAt: now, summary: VersionVector([n: 1]), writes: first))
        #expect(try a.importBundle(at: box.path("n.cb")).added == 1)
        // M's bundle: M:5 claims to have seen N:1.
        let second = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: 5, n: 1]),
            writes: [forge.keyWrite(id, "secret-9", dot: Dot(replica: m, counter: 5), vector: VersionVector([m: 5, n: 1]), at: now)])
        try expectRefused(a, box, second, rule: .mutualSupersession)
        #expect(try a.item(named: "x").field("key")?.value == "secret-8")
    }

    /// Issue: "a bundle whose summary claims a huge counter for another
    /// replica censors that replica forever". The claim counts only as far
    /// as the bundle's records back it, so that replica's later writes
    /// still merge.
    @Test func summaryClaimForAnotherReplicaDoesNotCensorIt() throws {
        let (box, a, forge) = try setup()
        try a.exportBundle(to: box.path("a.cb"))
        _ = try Vault.clone(bundleAt: box.path("a.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        let rb = try b.replicaID()
        let m = ReplicaID.random()
        let bytes = try forge.bundle(
            replica: m, createdAt: now, summary: VersionVector([m: 1, rb: 1 << 50]),
            writes: forge.newItem(newID(), name: "from-m", secret: "secret-10", dot: Dot(replica: m, counter: 1), at: now))
        box.write("m.cb", bytes)
        #expect(try a.importBundle(at: box.path("m.cb")).added == 1)
        #expect(try a.summaryFile().vector[rb] < 1 << 50)
        try b.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "edited-on-b", isSecret: true)]))
        try b.exportBundle(to: box.path("b.cb"))
        #expect(try a.importBundle(at: box.path("b.cb")).changed == 1)
        #expect(try a.item(named: "svc").field("key")?.value == "edited-on-b")
    }

    /// Every rule-abiding bundle a real vault writes still imports: a
    /// three-replica exchange with a conflict, a delete and a local-only
    /// item (whose other-replica writes leave the summary).
    @Test func legitimateBundlesKeepTheRules() throws {
        let (box, a, _) = try setup()
        try a.exportBundle(to: box.path("a.cb"))
        _ = try Vault.clone(bundleAt: box.path("a.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        _ = try Vault.clone(bundleAt: box.path("a.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        let c = try VaultFile.open(path: box.path("c.coffer")).unlock(passphrase: box.passphrase)
        try b.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "b", isSecret: true)]))
        try c.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "c", isSecret: true)]))
        try b.add(apiKey("gone", "x"))
        try b.add(apiKey("mine", "y", policy: .localOnly))
        try b.exportBundle(to: box.path("b.cb"))
        try c.exportBundle(to: box.path("c.cb"))
        _ = try a.importBundle(at: box.path("b.cb"))
        _ = try a.importBundle(at: box.path("c.cb"))
        try a.delete("gone")
        try a.exportBundle(to: box.path("a2.cb"))
        _ = try b.importBundle(at: box.path("a2.cb"))
        _ = try c.importBundle(at: box.path("a2.cb"))
        try b.exportBundle(to: box.path("b2.cb"))
        _ = try c.importBundle(at: box.path("b2.cb"))
        let delta = try c.summaryFile().vector
        try a.exportBundle(to: box.path("d.cb"), since: delta)
        _ = try c.importBundle(at: box.path("d.cb"))
        #expect(try a.item(named: "svc").conflicts.first?.sides.count == 2)
        #expect(try c.item(named: "svc") == a.item(named: "svc").with(policyOf: c.item(named: "svc")))
        #expect(try !c.contains("gone") && !c.contains("mine"))
    }
}
