import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// A temporary folder with helpers for bundle tests at the library level.
final class BundleSandbox: @unchecked Sendable {
    let folder = TemporaryDirectory(prefix: "coffer-bundle")
    var dir: URL { folder.url }
    let passphrase = SecretBytes(copying: Array("correct horse battery staple".utf8))

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    func newVault(_ name: String = "a.coffer") throws -> Vault {
        try VaultFile.create(path: path(name), passphrase: passphrase, kdf: FastKDF.parameters)
    }

    func bytes(_ name: String) -> [UInt8] { Array((try? Data(contentsOf: dir.appendingPathComponent(name))) ?? Data()) }
    func write(_ name: String, _ bytes: [UInt8]) { try! Data(bytes).write(to: dir.appendingPathComponent(name)) }

    /// Every item decrypted, the summary and the raw state: what "the vault
    /// is unchanged" means.
    static func dump(_ v: Vault) throws -> String {
        var out = "summary \(try v.summaryFile().vector)\n"
        for s in try v.list() {
            let item = try v.item(named: "id:" + s.id.hex)
            out += "\(item.name) \(item.fields) \(item.tags) \(item.policy) \(item.conflicts) \(item.vector)\n"
            let state = try v.state(of: "id:" + s.id.hex)
            for rid in state.registers.keys.sorted() { out += "  \(rid) \(state.registers[rid]!)\n" }
        }
        return out
    }
}

func apiKey(_ name: String, _ value: String, policy: SyncPolicy = .sync) -> ItemDraft {
    ItemDraft(name: name, type: .apiKey, fields: [Field(name: "key", value: value, isSecret: true)], policy: policy)
}

func note(_ name: String, size: Int, seed: Int) -> ItemDraft {
    var text = ""
    var x = UInt64(seed &* 2_654_435_761 &+ 1)
    while text.utf8.count < size {
        x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        text += String(x >> 33, radix: 36)
    }
    return ItemDraft(name: name, type: .note, fields: [Field(name: "note", value: text, isSecret: true)])
}

@Suite("bundles: export, import, clone (library)")
struct BundleTests {
    @Test func fullRoundTripThroughClone() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("work/openai", "sk-1"))
        try a.add(apiKey("home/private", "sk-local", policy: .localOnly))
        try a.add(note("notes/big", size: 150_000, seed: 1))
        try a.delete("work/openai")
        try a.add(apiKey("work/openai", "sk-2"))
        let r = try a.exportBundle(to: box.path("full.cb"))
        #expect(r.kind == .full)
        #expect(r.items == 3) // the deleted item travels (its tombstone), local-only never
        let imported = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        #expect(imported.added == 3)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        #expect(b.vaultID == a.vaultID)
        #expect(try b.replicaID() != a.replicaID())
        #expect(try b.item(named: "work/openai").field("key")?.value == "sk-2")
        #expect(try b.item(named: "notes/big") == a.item(named: "notes/big"))
        #expect(try !b.contains("home/private"))
        #expect(try b.list().map(\.name) == ["notes/big", "work/openai"])
        // b has seen everything the bundle claims (a's own summary also
        // holds the local-only item's private writer, which never left a).
        #expect(try Vault.inspectBundle(at: box.path("full.cb")).header.summary.isDominated(by: b.summaryFile().vector))
        #expect(try !a.summaryFile().vector.isDominated(by: b.summaryFile().vector))
        // Idempotent: importing again changes nothing.
        let before = try BundleSandbox.dump(b)
        let again = try b.importBundle(at: box.path("full.cb"))
        #expect(again.unchanged == 3 && again.added == 0 && again.changed == 0)
        #expect(try BundleSandbox.dump(b) == before)
    }

    @Test func deltaCarriesOnlyUnseenVersions() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        for i in 0..<50 { try a.add(apiKey("svc/\(i)", "v\(i)")) }
        try a.exportBundle(to: box.path("full.cb"))
        _ = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        try b.writeSummary(to: box.path("b.sum"))
        for i in 0..<10 { try a.edit("svc/\(i)", ItemEdit(setFields: [Field(name: "key", value: "new\(i)", isSecret: true)])) }
        let since = try a.readSummary(at: box.path("b.sum")).vector
        let r = try a.exportBundle(to: box.path("delta.cb"), since: since)
        #expect(r.kind == .delta && r.items == 10)
        #expect(r.bytes < 16 * 1024)
        let ir = try b.importBundle(at: box.path("delta.cb"))
        #expect(ir.changed == 10 && ir.added == 0 && ir.conflictsOpened == 0)
        #expect(try b.item(named: "svc/3").field("key")?.value == "new3")
        #expect(try b.item(named: "svc/30").field("key")?.value == "v30")
    }

    @Test func concurrentEditsBecomeConflicts() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "base"))
        try a.exportBundle(to: box.path("full.cb"))
        _ = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        try a.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "from-a", isSecret: true)]))
        try b.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "from-b", isSecret: true)]))
        try a.exportBundle(to: box.path("a.cb"))
        try b.exportBundle(to: box.path("b.cb"))
        let ra = try a.importBundle(at: box.path("b.cb"))
        let rb = try b.importBundle(at: box.path("a.cb"))
        #expect(ra.conflictsOpened == 1 && rb.conflictsOpened == 1)
        #expect(try a.item(named: "svc") == b.item(named: "svc").with(policyOf: a.item(named: "svc")))
        #expect(try a.item(named: "svc").conflicts.first?.sides.count == 2)
    }

    @Test func localOnlyItemKeepsItsPolicyOnImport() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "v1"))
        try a.exportBundle(to: box.path("full.cb"))
        _ = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        try b.edit("svc", ItemEdit(policy: .localOnly))
        try a.edit("svc", ItemEdit(setFields: [Field(name: "key", value: "v2", isSecret: true)]))
        try a.exportBundle(to: box.path("full2.cb"))
        try b.importBundle(at: box.path("full2.cb"))
        #expect(try b.item(named: "svc").policy == .localOnly)
        #expect(try b.item(named: "svc").field("key")?.value == "v2")
        // And it does not leave b.
        try b.exportBundle(to: box.path("b.cb"))
        #expect(try Vault.inspectBundle(at: box.path("b.cb")).header.recordCount == 0)
    }

    @Test func deltaAssumingUnseenStateIsRefused() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "v1"))
        try a.exportBundle(to: box.path("full.cb"))
        _ = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        _ = try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
        let c = try VaultFile.open(path: box.path("c.coffer")).unlock(passphrase: box.passphrase)
        try a.add(apiKey("svc2", "v1"))
        try a.exportBundle(to: box.path("a2.cb"))
        try b.importBundle(at: box.path("a2.cb"))
        try b.writeSummary(to: box.path("b.sum"))
        try a.add(apiKey("svc3", "v1"))
        try a.exportBundle(to: box.path("delta.cb"), since: a.readSummary(at: box.path("b.sum")).vector)
        let before = try BundleSandbox.dump(c)
        let bytes = box.bytes("c.coffer")
        #expect {
            try c.importBundle(at: box.path("delta.cb"))
        } throws: { e in
            (e as? CofferError)?.kind == .badData && "\(e)".contains("assumes changes this vault has not seen")
        }
        #expect(try BundleSandbox.dump(c) == before)
        #expect(box.bytes("c.coffer") == bytes)
        // b, which has seen a2, takes it.
        #expect(try b.importBundle(at: box.path("delta.cb")).added == 1)
    }

    @Test func restoredVaultFileNeverReusesADot() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("one", "1"))
        try FileManager.default.copyItem(atPath: box.path("a.coffer"), toPath: box.path("old.coffer"))
        try a.add(apiKey("two", "2"))
        try a.add(apiKey("three", "3"))
        try a.exportBundle(to: box.path("a.cb"))
        let old = try VaultFile.open(path: box.path("old.coffer")).unlock(passphrase: box.passphrase)
        let rid = try old.replicaID()
        try old.importBundle(at: box.path("a.cb"))
        try old.add(apiKey("four", "4"))
        // The restored file takes a new replica id (it is another file, and
        // the bundle saw writes under its id it never made): none of its
        // new dots can be one a wrote.
        #expect(try old.replicaID() != rid)
        for d in try old.state(of: "four").dots { #expect(d.replica != rid) }
    }

    @Test func cloneFailuresLeaveNothing() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("svc", "v1"))
        try a.exportBundle(to: box.path("full.cb"))
        let wrong = SecretBytes(copying: Array("wrong".utf8))
        #expect {
            try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("b.coffer"), passphrase: wrong)
        } throws: { ($0 as? CofferError)?.exitCode == 77 }
        #expect {
            try Vault.clone(bundleAt: box.path("full.cb"), to: box.path("a.coffer"), passphrase: box.passphrase)
        } throws: { ($0 as? CofferError)?.exitCode == 73 }
        var damaged = box.bytes("full.cb")
        damaged[damaged.count - 5] ^= 1
        box.write("bad.cb", damaged)
        #expect {
            try Vault.clone(bundleAt: box.path("bad.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
        } throws: { ($0 as? CofferError)?.exitCode == 65 }
        let files = try FileManager.default.contentsOfDirectory(atPath: box.dir.path).sorted()
        // (.a.coffer.written is a's write mark: docs/sync.md, "Restored
        // vault files".)
        #expect(files == [".a.coffer.written", "a.coffer", "bad.cb", "full.cb"])
    }
}

extension Item {
    /// The same item with another's policy and timestamps (row data that is
    /// local to a replica).
    func with(policyOf other: Item) -> Item {
        var x = self
        x.policy = other.policy
        x.createdAt = other.createdAt
        x.updatedAt = other.updatedAt
        return x
    }
}

extension ItemEdit {
    init(setFields: [Field] = [], policy: SyncPolicy? = nil) {
        self.init()
        self.setFields = setFields
        self.policy = policy
    }
}
