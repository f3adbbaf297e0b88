import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Issue 24, items 2 and 4: key epochs can be neither exhausted nor
/// hijacked by one file, and a header dropped into the sync folder cannot
/// make `sync` run Argon2id above the vault's own cost (docs/sync.md,
/// "Master-key rotation"; rule `key-epoch-jump`, docs/bundle-format.md).
@Suite("key epochs: bounded jumps, no keyless Argon2id")
struct KeyEpochTests {
    /// Vault `a` with one item, its sync folder holding a's bundle, and a
    /// clone `b` of it.
    func setup() throws -> (BundleSandbox, Vault, Vault, String) {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "base"))
        let dir = box.path("sync")
        try Vault.createSyncFolder(dir)
        _ = try a.sync(dir: dir)
        let full = box.path("a.cb")
        try a.exportBundle(to: full)
        _ = try Vault.clone(bundleAt: full, to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        return (box, a, b, dir)
    }

    /// What a passphrase holder can write: a bundle of `epoch` under a
    /// master key of their choice, wrapped under the vault's passphrase.
    func forgedEpochBundle(_ v: Vault, _ box: BundleSandbox, epoch number: UInt64, kdf: KDFParameters = FastKDF.parameters) throws -> [UInt8] {
        let m = ReplicaID(bytes: Random.bytes(16))!
        let epoch = KeyEpoch(number: number, rekeyedBy: m, rekeyedAt: Clock.nowMillis())
        let master = SecretBytes.random(count: 32)
        let w = try KeyHierarchy.wrapMasterKey(master, passphrase: box.passphrase, vault: v.vaultID, kdf: kdf, epoch: epoch, binding: .integrity)
        let forge = BundleForge(vaultID: v.vaultID, kdf: kdf, salt: w.salt, wrapped: w.wrapped, master: master, nonceLabel: "forged epoch \(number)")
        let id = ItemID(bytes: Random.bytes(16))!
        let dot = Dot(replica: m, counter: 1)
        return try forge.bundle(
            replica: m, createdAt: Clock.nowMillis(), summary: VersionVector(dot: dot),
            writes: forge.newItem(id, name: "planted", secret: "forged-secret", dot: dot, at: Clock.nowMillis()),
            wrapping: KeyWrappingVersion(vector: VersionVector(dot: Dot(replica: m, counter: 1)), changedBy: m, changedAt: 1),
            keyEpoch: epoch, wrapBinding: .integrity)
    }

    /// The review's file: epoch 2^53 under a key of the forger's choice.
    /// Before, every replica adopted it on `sync` and `rekey` failed
    /// forever after ("cannot grow further").
    @Test func aForgedEpochJumpIsRefusedAndRekeyStillWorks() throws {
        let (box, a, b, dir) = try setup()
        box.write("sync/forged.coffer-bundle", try forgedEpochBundle(a, box, epoch: KeyEpoch.maxNumber))
        try b.edit(
            "svc",
            {
                var e = ItemEdit()
                e.setFields = [Field(name: "key", value: "from-b", isSecret: true)]
                return e
            }())
        _ = try b.sync(dir: dir)
        let before = try BundleSandbox.dump(a)
        // import: refused whole, the rule named, before any Argon2id run.
        let e = #expect(throws: CofferError.self) {
            try a.adoptKeyEpoch(ofBundleAt: box.path("sync/forged.coffer-bundle"), passphrase: box.passphrase)
        }
        #expect(e?.exitCode == 65 && e?.message.contains("bundle rule key-epoch-jump") == true, "\(String(describing: e))")
        #expect(try BundleSandbox.dump(a) == before)
        // sync: reported, the rest merged, no key adopted.
        var asked = 0
        let report = try a.sync(dir: dir) { (_, _, _) throws(CofferError) in
            asked += 1
            return box.passphrase
        }
        #expect(asked == 0)
        #expect(report.keyEpochAdopted == nil && a.keyEpoch == .initial)
        #expect(report.failed.count == 1 && report.failed[0].error.message.contains("key-epoch-jump"), "\(report.failed)")
        #expect(try RekeyTests.secret(a, "svc") == "from-b")
        // There is a next epoch.
        let (r, rekeyed) = try a.file.rekey(a, passphrase: box.passphrase)
        #expect(rekeyed.epoch.number == 1)
        #expect(try RekeyTests.secret(r, "svc") == "from-b")
        #expect(throws: CofferError.self) { try r.item(named: "planted") }
    }

    /// A replica that missed several rekeys catches up in one sync.
    @Test func aReplicaThatMissedSeveralRekeysCatchesUp() throws {
        let (box, a, b, dir) = try setup()
        var current = b
        for _ in 0..<3 { current = try current.file.rekey(current, passphrase: box.passphrase).vault }
        _ = try current.sync(dir: dir)
        let report = try a.sync(dir: dir) { (_, _, _) throws(CofferError) in box.passphrase }
        #expect(report.keyEpochAdopted?.epoch.number == 3 && report.keyEpochAdopted?.previous.number == 0)
        let after = try VaultFile.open(path: a.path).unlock(passphrase: box.passphrase)
        #expect(try after.keyEpoch.number == 3 && after.verify().isSound)
        // A forged epoch within the bound (a key holder may rekey) is
        // adopted, and `rekey` goes on from it.
        box.write("sync/forged.coffer-bundle", try forgedEpochBundle(after, box, epoch: 3 + KeyEpoch.maxJump))
        let r2 = try after.sync(dir: dir) { (_, _, _) throws(CofferError) in box.passphrase }
        #expect(r2.keyEpochAdopted?.epoch.number == 3 + KeyEpoch.maxJump)
        let last = try VaultFile.open(path: a.path).unlock(passphrase: box.passphrase)
        #expect(try last.file.rekey(last, passphrase: box.passphrase).report.epoch.number == 4 + KeyEpoch.maxJump)
    }

    /// A clone starts from an epoch of at most 2^52.
    @Test func aCloneOfAnExhaustedEpochIsRefused() throws {
        let (box, a, _, _) = try setup()
        box.write("forged.cb", try forgedEpochBundle(a, box, epoch: KeyEpoch.maxCloneNumber + 1))
        let e = #expect(throws: CofferError.self) {
            try Vault.clone(bundleAt: box.path("forged.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        }
        #expect(e?.exitCode == 65 && e?.message.contains("key-epoch-jump") == true, "\(String(describing: e))")
        #expect(!FileManager.default.fileExists(atPath: box.path("c.coffer")))
    }

    /// A keyless header (no key, garbage wrapped key) of a newer epoch
    /// asking for more Argon2id than the vault's own: `sync` runs none of
    /// it and says what is there; `adoptAboveOwnKDF` (`--adopt-key`)
    /// tries it.
    @Test func aKeylessExpensiveHeaderRunsNoArgon2() throws {
        let (box, a, _, dir) = try setup()
        let own = a.file.kdf
        let big = KDFParameters(memoryKiB: own.memoryKiB * 8, iterations: own.iterations + 2, parallelism: own.parallelism)
        let m = ReplicaID(bytes: Random.bytes(16))!
        let header = BundleHeader(
            vaultID: a.vaultID, replicaID: m, kind: .full, createdAt: Clock.nowMillis(), recordCount: 0, kdf: big,
            salt: Random.bytes(16), wrappedMasterKey: Random.bytes(72), summary: VersionVector(dot: Dot(replica: m, counter: 1)),
            since: VersionVector(), wrapping: KeyWrappingVersion(vector: VersionVector(dot: Dot(replica: m, counter: 1)), changedBy: m, changedAt: 1),
            keyEpoch: KeyEpoch(number: 1, rekeyedBy: m, rekeyedAt: Clock.nowMillis()), wrapBinding: .integrity)
        box.write("sync/dropped.coffer-bundle", header.encoded + Random.bytes(64))
        var asked = 0
        let report = try a.sync(dir: dir) { (_, _, _) throws(CofferError) in
            asked += 1
            return box.passphrase
        }
        #expect(asked == 0, "a passphrase was asked for: Argon2id would have run")
        #expect(report.keyEpochAdopted == nil && report.keyEpochPending?.number == 1)
        let f = try #require(report.failed.first { $0.path.hasSuffix("dropped.coffer-bundle") })
        #expect(f.error.kind == .locked)
        #expect(f.error.message.contains("more than this vault's own") && f.error.message.contains("not yet authenticated"), "\(f.error.message)")
        #expect(f.error.message.contains("memory 64 MiB (this vault: 8 MiB)") && f.error.message.contains("passes 3 (this vault: 1)"), "\(f.error.message)")
        // Adopt it by syncing again with key adoption (`--adopt-key` on the
        // command line, ErrorWordsTests).
        #expect(f.error.remedy?.action == .adoptKey && f.error.remedy?.path == f.path)
        // Asked for: tried (and the garbage key does not open).
        let e = #expect(throws: CofferError.self) {
            _ = try a.sync(dir: dir, adoptAboveOwnKDF: true) { (_, _, attempt) throws(CofferError) in
                attempt == 0 ? box.passphrase : nil
            }
        }
        #expect(e?.kind == .wrongPassphrase, "\(String(describing: e))")
        #expect(a.keyEpoch == .initial)
    }
}
