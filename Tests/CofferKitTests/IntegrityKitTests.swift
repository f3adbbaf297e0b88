import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Item records, the vault MAC, format-1 upgrade, payload padding and
/// Unicode normalisation (issue 12, vault-file half).
@Suite("vault integrity")
struct IntegrityKitTests {
    func secret(_ v: String) -> Field { Field(name: "key", value: v, isSecret: true) }

    func edit(setting fields: [Field] = [], policy: SyncPolicy? = nil) -> ItemEdit {
        var e = ItemEdit()
        e.setFields = fields
        e.policy = policy
        return e
    }

    @Test func everyWriteKeepsTheVaultMAC() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [secret("1")], tags: ["t"], source: "openai"))
        try v.add(
            ItemDraft(
                name: "b", type: .login,
                fields: [Field(name: "username", value: "me", isSecret: false), Field(name: "url", value: "https://x", isSecret: false)]))
        try v.edit("a", edit(setting: [secret("2")]))
        try v.edit("a", edit(policy: .localOnly))
        try v.delete("b")
        _ = try v.claimReplica()
        let report = try v.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.items == 2)
        #expect(report.historyVersions >= 1)
    }

    @Test func listingComesFromRecordsWithUsernameAndURL() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(
            ItemDraft(
                name: "site", type: .login,
                fields: [
                    Field(name: "username", value: "me", isSecret: false), Field(name: "url", value: "https://x", isSecret: false),
                    Field(name: "password", value: "pw", isSecret: true),
                ], source: "github"))
        try v.add(ItemDraft(name: "hidden", type: .login, fields: [Field(name: "username", value: "who", isSecret: true)]))
        let list = try v.list()
        #expect(list.map(\.name) == ["hidden", "site"])
        #expect(list[1].username == "me" && list[1].url == "https://x" && list[1].source == "github")
        // A username marked secret stays out of listings.
        #expect(list[0].username == nil)
        // The listing reads no field version: with every version gone, it
        // still lists (from the records); a read of the item refuses.
        try v.store.write { db in try db.execute(sql: "DELETE FROM fieldVersion") }
        #expect(try v.list().count == 2)
        #expect(throws: CofferError.self) { try v.item(named: "site") }
    }

    @Test func aFormatOneVaultIsUpgradedOnUnlock() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [secret("A")]))
        try v.store.write { db in
            try db.execute(sql: "DELETE FROM vaultIntegrity; UPDATE item SET record = NULL; UPDATE vault SET formatVersion = 1")
            // As the build of format 1 wrapped it (before `coffer-wrap-v3`).
            try wrapAsLegacy(v, db, passphrase: SecretBytes(copying: Array("pw".utf8)))
        }
        let again = try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array("pw".utf8)))
        #expect(try again.item(named: "a").primaryField?.value == "A")
        #expect(try again.verify().isSound)
        #expect(try again.verify().formatVersion == VaultStore.formatVersion)
        // A format-2 vault without its MAC is refused, not rebuilt.
        try v.store.write { db in try db.execute(sql: "DELETE FROM vaultIntegrity") }
        #expect(throws: CofferError.self) { try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array("pw".utf8))) }
    }

    @Test func storedPayloadsArePaddedToFixedBuckets() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "s", type: .apiKey, fields: [secret("x")]))
        try v.add(ItemDraft(name: "a-much-longer-name", type: .apiKey, fields: [secret(String(repeating: "y", count: 40))]))
        // The secret and the name of both items: nonce 24 + tag 16 + one
        // 64-byte block, whatever their lengths.
        let a = try v.state(of: "s").id
        let b = try v.state(of: "a-much-longer-name").id
        let registers = [v.registerID(field: "key", item: a), v.registerID(field: "key", item: b), RegisterID.name]
        let lengths = try v.store.read { db in
            try Data.fetchAll(
                db, sql: "SELECT payload FROM fieldVersion WHERE registerId IN (?, ?, ?)",
                arguments: StatementArguments(registers.map { Data($0.bytes) })
            ).map(\.count)
        }
        #expect(lengths.count == 4, "\(lengths)")
        #expect(lengths.allSatisfy { ($0 - 40) % FieldPayload.padBlock == 0 }, "\(lengths)")
        #expect(Set(lengths).count == 1, "\(lengths)")
        #expect(try v.item(named: "a-much-longer-name").primaryField?.value == String(repeating: "y", count: 40))
        // Unpadded payloads (older vaults, bundles of older replicas) still read.
        let p = FieldPayload(name: "k", value: Array("v".utf8), isSecret: true)
        #expect(try FieldPayload(decoding: p.encoded) == p)
        #expect(try FieldPayload(decoding: p.paddedEncoding) == p)
        var bad = p.paddedEncoding
        bad[bad.count - 1] = 1
        #expect(throws: FormatError.self) { try FieldPayload(decoding: bad) }
    }

    @Test func passphrasesAndFieldNamesAreNFC() throws {
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        #expect(Array(nfc.utf8) != Array(nfd.utf8))
        let vBox = try TemporaryVault(passphrase: nfd)
        let v = vBox.vault
        let file = try VaultFile.open(path: v.path)
        #expect(throws: Never.self) { try file.unlock(passphrase: SecretBytes(copying: Array(nfc.utf8))) }
        #expect(throws: Never.self) { try file.unlock(passphrase: SecretBytes(copying: Array(nfd.utf8))) }
        // Not UTF-8: refused when creating.
        let nfcFolder = TemporaryDirectory(prefix: "coffer-nfc")
        let dir = nfcFolder.url
        #expect(throws: CofferError.self) {
            try VaultFile.create(path: dir.appendingPathComponent("v").path, passphrase: SecretBytes(copying: [0x63, 0xFF, 0x61]), kdf: FastKDF.parameters)
        }
        // One field whichever way its name is typed.
        try v.add(ItemDraft(name: "x", type: .custom, fields: [Field(name: "na\u{EF}ve", value: "1", isSecret: false)]))
        try v.edit("x", edit(setting: [Field(name: "nai\u{308}ve", value: "2", isSecret: false)]))
        let item = try v.item(named: "x")
        #expect(item.fields.count == 1)
        #expect(item.fields.first.map { Array($0.name.utf8) } == Array("na\u{EF}ve".utf8))
        #expect(item.fields.first?.value == "2")
    }

    @Test func anImportKeepsTheMACAndRecords() throws {
        let aBox = try TemporaryVault()
        let a = aBox.vault
        for i in 0..<20 { try a.add(ItemDraft(name: "i\(i)", type: .apiKey, fields: [secret("v\(i)")])) }
        let scratch = TemporaryDirectory(prefix: "coffer-int")
        let bundle = scratch.path("a.cb")
        defer { unlink(bundle) }
        try a.exportBundle(to: bundle)
        let clonePath = scratch.path("clone/c.coffer")
        try FileManager.default.createDirectory(atPath: (clonePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Vault.clone(bundleAt: bundle, to: clonePath, passphrase: SecretBytes(copying: Array("pw".utf8)))
        let b = try VaultFile.open(path: clonePath).unlock(passphrase: SecretBytes(copying: Array("pw".utf8)))
        #expect(try b.verify().isSound)
        #expect(try b.list().count == 20)
        // A merge into existing items (not the bulk path) keeps them too.
        try a.edit("i3", edit(setting: [secret("new")]))
        try a.exportBundle(to: bundle)
        try b.importBundle(at: bundle)
        #expect(try b.verify().isSound)
        #expect(try b.item(named: "i3").primaryField?.value == "new")
    }
}
