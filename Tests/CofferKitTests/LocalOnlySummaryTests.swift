import CofferCrypto
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// A bundle's header summary tells receivers what they will have seen
/// after importing it. Items that are local-only on the exporter are not in
/// the bundle, so the summary must not claim the other replicas' writes
/// those items hold — or a third replica would skip them for good when they
/// arrive from their author (found in review: an item synced by B, made
/// local-only on C, vanished on A after A imported C's bundle, then B's).
@Suite("Local-only items and bundle summaries")
struct LocalOnlySummaryTests {
    @Test func aThirdReplicaStillReceivesAnItemMadeLocalOnlyElsewhere() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-lo-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pw = SecretBytes(copying: Array("pw".utf8))
        let b = try VaultFile.create(path: dir + "/b.coffer", passphrase: pw, kdf: FastKDF.parameters)
        try b.add(ItemDraft(name: "shared/filler", type: .note, fields: [Field(name: "notes", value: "n", isSecret: true)]))
        _ = try b.exportBundle(to: dir + "/b0.cb")
        _ = try Vault.clone(bundleAt: dir + "/b0.cb", to: dir + "/a.coffer", passphrase: pw)
        _ = try Vault.clone(bundleAt: dir + "/b0.cb", to: dir + "/c.coffer", passphrase: pw)
        let a = try VaultFile.open(path: dir + "/a.coffer").unlock(passphrase: pw)
        let c = try VaultFile.open(path: dir + "/c.coffer").unlock(passphrase: pw)

        // B writes secret/x; C receives it, makes it local-only, and exports.
        try b.add(ItemDraft(name: "secret/x", type: .apiKey, fields: [Field(name: "key", value: "sk-x", isSecret: true)]))
        try b.add(ItemDraft(name: "later", type: .apiKey, fields: [Field(name: "key", value: "sk-later", isSecret: true)]))
        _ = try b.exportBundle(to: dir + "/b1.cb")
        _ = try c.importBundle(at: dir + "/b1.cb")
        var e = ItemEdit()
        e.policy = .localOnly
        try c.edit("secret/x", e)
        _ = try c.exportBundle(to: dir + "/c1.cb")

        // A hears from C first, then from B: it must end up with secret/x.
        _ = try a.importBundle(at: dir + "/c1.cb")
        _ = try a.importBundle(at: dir + "/b1.cb")
        #expect(try a.item(named: "secret/x").primaryField?.value == "sk-x")
        #expect(try a.item(named: "later").primaryField?.value == "sk-later")

        // A later edit on B arrives whole, not as a nameless fragment.
        var e2 = ItemEdit()
        e2.setFields = [Field(name: "extra", value: "later", isSecret: false)]
        try b.edit("secret/x", e2)
        _ = try b.exportBundle(to: dir + "/b2.cb")
        _ = try a.importBundle(at: dir + "/b2.cb")
        let x = try a.item(named: "secret/x")
        #expect(x.field("extra")?.value == "later" && x.type == .apiKey)
        #expect(try a.list().allSatisfy { !$0.name.isEmpty })
    }
}
