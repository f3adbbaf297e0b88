import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

@Suite("Vault items")
struct VaultTests {
    @Test func addGetEditDelete() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "work/openai", type: .apiKey, fields: [Field(name: "key", value: "sk-1", isSecret: true)], tags: ["ai"], source: "openai"))
        var item = try v.item(named: "work/openai")
        #expect(item.primaryField?.value == "sk-1")
        #expect(item.tags == ["ai"] && item.source == "openai" && item.type == .apiKey)

        var e = ItemEdit()
        e.rename = "personal/openai"
        e.setFields = [Field(name: "org", value: "acme", isSecret: false)]
        e.addTags = ["x"]
        try v.edit("work/openai", e)
        #expect(try !v.contains("work/openai"))
        item = try v.item(named: "personal/openai")
        #expect(item.field("org")?.value == "acme" && item.tags == ["ai", "x"])

        try v.delete("personal/openai")
        #expect(throws: CofferError.self) { try v.item(named: "personal/openai") }
        #expect(try v.list().isEmpty)
        // The name is free again.
        try v.add(ItemDraft(name: "personal/openai", type: .apiKey, fields: [Field(name: "key", value: "sk-2", isSecret: true)]))
        #expect(try v.item(named: "personal/openai").primaryField?.value == "sk-2")
    }

    /// `id:` with a prefix or with the whole id (read by its key) finds the
    /// same item; a deleted item's whole id, a random one and a prefix of
    /// two items are refused like a missing name.
    @Test func itemsByIdPrefixAndWholeID() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let a = try v.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "sk-a", isSecret: true)]))
        let b = try v.add(ItemDraft(name: "b", type: .apiKey, fields: [Field(name: "key", value: "sk-b", isSecret: true)]))
        #expect(try v.item(named: "id:" + a.id.hex).primaryField?.value == "sk-a")
        #expect(try v.item(named: "id:" + b.id.hex.uppercased()).primaryField?.value == "sk-b")
        #expect(try v.item(named: "id:" + a.id.hex.prefix(12)).name == "a")
        try v.delete("a")
        #expect { try v.item(named: "id:" + a.id.hex) } throws: { ($0 as? CofferError)?.kind == .itemNotFound }
        #expect { try v.item(named: "id:" + ItemID.random().hex) } throws: { ($0 as? CofferError)?.kind == .itemNotFound }
        #expect(try v.item(named: "id:" + b.id.hex).name == "b")
    }

    @Test func duplicateNamesAndBadNamesAreRefused() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .note, fields: [Field(name: "notes", value: "n", isSecret: true)]))
        do {
            try v.add(ItemDraft(name: "a", type: .note))
            Issue.record("duplicate accepted")
        } catch {
            #expect(error.kind == .duplicateName && error.exitCode == 73)
        }
        for bad in ["", "/a", "a/", "a//b", "id:1234", "a\u{7}b"] {
            #expect(throws: CofferError.self, "\(bad)") { try v.add(ItemDraft(name: bad, type: .note)) }
        }
    }

    /// PRODUCT.md §4: every write bumps the replica counter and stamps the
    /// written fields; the item's vector is the maximum of its fields'.
    @Test func versionVectorsAfterASequenceOfWrites() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let r = try v.replicaID()
        try v.add(
            ItemDraft(
                name: "svc", type: .login,
                fields: [
                    Field(name: "username", value: "u", isSecret: false), Field(name: "password", value: "p1", isSecret: true),
                ]))
        var s = try v.state(of: "svc")
        let user = v.registerID(field: "username", item: s.id)
        let pass = v.registerID(field: "password", item: s.id)
        #expect(s.registers[.name]?.map(\.vector) == [VersionVector([r: 1])])
        #expect(s.registers[pass]?.map(\.vector) == [VersionVector([r: 1])])
        #expect(s.vector == VersionVector([r: 1]))

        var e = ItemEdit()
        e.setFields = [Field(name: "password", value: "p2", isSecret: true)]
        try v.edit("svc", e) // write 2: password only
        var e2 = ItemEdit()
        e2.rename = "svc2"
        try v.edit("svc", e2) // write 3: name only
        s = try v.state(of: "svc2")
        #expect(s.registers[pass]?.map(\.dot) == [Dot(replica: r, counter: 2)])
        #expect(s.registers[pass]?.map(\.vector) == [VersionVector([r: 2])])
        #expect(s.registers[user]?.map(\.vector) == [VersionVector([r: 1])])
        #expect(s.registers[.name]?.map(\.vector) == [VersionVector([r: 3])])
        #expect(s.vector == VersionVector([r: 3]))
        // One version per register: no conflicts locally, vectors of size 1.
        #expect(s.conflictedRegisters.isEmpty)
        #expect(s.registers.values.allSatisfy { $0.count == 1 && $0[0].vector.count == 1 })

        // The delete leaves a tombstone covering everything seen.
        try v.delete("svc2")
        let after = try v.store.read { db in try Queries.itemState(db, id: s.id) }
        #expect(after.registers[.deleted]?.map(\.vector) == [VersionVector([r: 4])])
        #expect(after.isDeleted)
        let row = try v.store.read { db in try Queries.itemRow(db, id: s.id) }
        #expect(row?.isDeleted == true)
        // Superseded versions went to history.
        let hist = try v.store.read { db in try Queries.history(db, item: s.id) }
        #expect(hist.map(\.1.dot.counter).sorted() == [1, 1]) // old password and old name
    }

    /// A ciphertext moved to another row (or another vault) must not
    /// decrypt: the associated data binds vault, item, field and version.
    @Test func movedCiphertextFailsToDecrypt() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "A", isSecret: true)]))
        try v.add(ItemDraft(name: "b", type: .apiKey, fields: [Field(name: "key", value: "B", isSecret: true)]))
        let a = try v.state(of: "a").id
        let b = try v.state(of: "b").id
        try v.store.write { db in
            let payload = try Data.fetchOne(
                db, sql: "SELECT payload FROM fieldVersion WHERE itemId = ? AND registerId = ?",
                arguments: [Data(a.bytes), Data(v.registerID(field: "key", item: a).bytes)])!
            try db.execute(
                sql: "UPDATE fieldVersion SET payload = ? WHERE itemId = ? AND registerId = ?",
                arguments: [payload, Data(b.bytes), Data(v.registerID(field: "key", item: b).bytes)])
        }
        do {
            _ = try v.item(named: "b")
            Issue.record("moved ciphertext decrypted")
        } catch {
            #expect(error.kind == .badData)
        }
        #expect(try v.item(named: "a").primaryField?.value == "A")
    }

    @Test func wrongPassphraseAndMissingVault() throws {
        let vBox = try TemporaryVault(passphrase: "right")
        let v = vBox.vault
        let file = try VaultFile.open(path: v.path)
        do {
            _ = try file.unlock(passphrase: SecretBytes(copying: Array("wrong".utf8)))
            Issue.record("wrong passphrase accepted")
        } catch {
            #expect(error.kind == .wrongPassphrase && error.exitCode == 77)
        }
        #expect(try file.unlock(passphrase: SecretBytes(copying: Array("right".utf8))).vaultID == v.vaultID)
        do {
            _ = try VaultFile.open(path: "/nonexistent/coffer/vault.coffer")
            Issue.record("missing vault opened")
        } catch {
            #expect(error.kind == .vaultNotFound && error.exitCode == 66)
        }
    }

    @Test func expiryParsing() {
        let today = Day("2026-01-31")!
        #expect(Day.parseExpiry("2026-02-28", today: today) == Day("2026-02-28"))
        #expect(Day.parseExpiry("30d", today: today) == Day("2026-03-02"))
        #expect(Day.parseExpiry("1w", today: today) == Day("2026-02-07"))
        for bad in ["2026-02-30", "2026-13-01", "tomorrow", "30", "-1d", "26-01-01"] {
            #expect(Day.parseExpiry(bad, today: today) == nil, "\(bad)")
        }
    }
}
