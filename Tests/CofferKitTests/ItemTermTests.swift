import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Format 6: one vault-MAC term per item, holding the item's row, its
/// record's tag and its current versions (docs/key-hierarchy.md, "Vault
/// MAC"); format-5 vaults fold their MAC on the first unlock without
/// forgetting an earlier edit (issue 12).
@Suite("vault MAC: one term per item (format 6)")
struct ItemTermTests {
    func reopen(_ v: Vault) throws -> Vault {
        try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array("pw".utf8)))
    }

    func macProblems(_ v: Vault) throws -> [String] {
        try v.verify().problems.filter { $0.check == .vaultMAC }.map(\.message)
    }

    /// A vault with history, a conflict-free edit, a deleted item and a
    /// local-only item: every kind of row the item terms cover.
    func populated() throws -> TemporaryVault {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(
            ItemDraft(
                name: "web/mail", type: .login,
                fields: [
                    Field(name: "password", value: "p1", isSecret: true), Field(name: "username", value: "me", isSecret: false),
                ]))
        var e = ItemEdit()
        e.setFields = [Field(name: "password", value: "p2", isSecret: true)]
        _ = try v.edit("web/mail", e)
        try v.add(ItemDraft(name: "gone", type: .apiKey, fields: [Field(name: "key", value: "k", isSecret: true)]))
        try v.delete("gone")
        try v.add(ItemDraft(name: "device", type: .apiKey, fields: [Field(name: "key", value: "d", isSecret: true)], policy: .localOnly))
        return vBox
    }

    func stored(_ v: Vault) throws -> (whole: [UInt8], areas: [UInt8]) {
        try v.store.read { db in (try #require(try Queries.storedMAC(db)), try #require(try Queries.storedAreaMACs(db))) }
    }

    @Test func everyWriteKeepsTheStoredMACEqualToTheRows() throws {
        let vBox = try populated()
        let v = vBox.vault
        let (whole, areas) = try stored(v)
        let computed = VaultMAC(key: v.keys.mac)
        let cover = try v.store.read { db in try Queries.computeMAC(db, into: computed) }
        #expect(computed.delta == whole && computed.areaDelta == areas)
        #expect(cover.items == 3 && cover.history >= 1 && cover.versions >= 6)
        // No term of its own per version: the versions area stays zero.
        #expect(computed.area(.versions) == [UInt8](repeating: 0, count: 32))
    }

    /// A merge that picks the other copy of a write this vault holds
    /// (`Register.normalize`: the same dot sealed again, as a replica that
    /// re-encrypted it sends it) stores that copy: rows, record and MAC term
    /// stay one state (before, the row kept the old copy while the record
    /// and term took the new one).
    @Test func anotherCopyOfAHeldWriteReplacesTheStoredRow() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "v1", isSecret: true)]))
        let id = try v.store.read { db in try v.resolve(db, "k") }
        let rid = v.registerID(field: "key", item: id)
        var stored: [UInt8] = []
        try v.write { db, mac in
            let old = try Queries.cachedItemState(db, id: id)
            let row = try #require(try Queries.cachedItemRow(db, id: id))
            let held = try #require(old.registers[rid]?.first)
            let again = v.seal(
                FieldPayload(name: "key", value: Array("v1".utf8), isSecret: true), item: id, register: rid, dot: held.dot,
                vector: held.vector, at: held.writtenAt, tombstone: held.isTombstone)
            #expect(again.payload != held.payload)
            var new = old
            new.registers[rid] = [again]
            stored = again.payload
            try v.save(db, row: row, old: old, new: new, now: held.writtenAt + 1, mac: mac)
        }
        let report = try v.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(try v.store.read { db in try Queries.cachedItemState(db, id: id).registers[rid]?.first?.payload } == stored)
        #expect(try v.item(named: "k").primaryField?.value == "v1")
    }

    @Test func aFormatFiveVaultIsFoldedOnUnlock() throws {
        let vBox = try populated()
        let v = vBox.vault
        try setBack(v, toFormat: 5)
        let format5 = try stored(v)
        let upgraded = try reopen(v)
        let report = try upgraded.verify()
        #expect(report.isSound, "\(report.problems)")
        // Integrity data brought to format 6's rules, then the key wrapped
        // with coffer-wrap-v3 (format 7): both in the one passphrase unlock.
        #expect(report.formatVersion == VaultStore.formatVersion)
        #expect(try upgraded.store.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == VaultStore.formatVersion)
        // The fold gives exactly the MAC of the rows under the new rules.
        let fresh = VaultMAC(key: upgraded.keys.mac)
        try upgraded.store.read { db in try Queries.computeMAC(db, into: fresh) }
        #expect(try stored(upgraded).whole == fresh.delta && stored(upgraded).areas == fresh.areaDelta)
        #expect(format5.whole != fresh.delta)
        #expect(try upgraded.item(named: "web/mail").fields.first { $0.name == "password" }?.value == "p2")
        #expect(try upgraded.item(named: "device").primaryField?.value == "d")
        // Writes after the upgrade keep it sound.
        var e = ItemEdit()
        e.setFields = [Field(name: "password", value: "p3", isSecret: true)]
        _ = try upgraded.edit("web/mail", e)
        #expect(try upgraded.verify().isSound)
    }

    /// The vault the format-5 build really wrote (Fixtures/vault-format5:
    /// format-1 records in their own table, format-5 MAC terms) upgrades
    /// on unlock, verifies, serves its values, and takes writes.
    @Test func aVaultWrittenByTheFormatFiveBuildUpgrades() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/vault-format5/vault.coffer")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-f5-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("vault.coffer").path
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
        let v = try VaultFile.open(path: path).unlock(passphrase: SecretBytes(copying: Array("correct horse battery staple".utf8)))
        let report = try v.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.formatVersion == VaultStore.formatVersion && report.items == 4 && report.historyVersions == 1)
        #expect(try v.item(named: "web/mail").fields.first { $0.name == "password" }?.value == "p2")
        #expect(try v.item(named: "web/mail").fields.first { $0.name == "username" }?.value == "me@example.com")
        #expect(try v.item(named: "api/openai").primaryField?.value == "sk-fixture")
        #expect(try v.item(named: "device/pin").primaryField?.value == "1234")
        #expect(throws: CofferError.self) { try v.item(named: "gone") }
        #expect(try v.list().map(\.name) == ["api/openai", "device/pin", "web/mail"])
        #expect(try v.store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'itemRecord'") } == 0)
        var e = ItemEdit()
        e.setFields = [Field(name: "password", value: "p3", isSecret: true)]
        _ = try v.edit("web/mail", e)
        #expect(try v.verify().isSound)
        try v.exportBundle(to: dir.appendingPathComponent("out.cb").path)
        // An edit of the fixture before its upgrade stays detected.
        let edited = dir.appendingPathComponent("edited.coffer").path
        try FileManager.default.copyItem(atPath: fixture.path, toPath: edited)
        let q = try DatabaseQueue(path: edited)
        try q.write { db in try db.execute(sql: "UPDATE replica SET counter = counter + 1000") }
        try q.close()
        let w = try VaultFile.open(path: edited).unlock(passphrase: SecretBytes(copying: Array("correct horse battery staple".utf8)))
        #expect(!(try macProblems(w)).isEmpty)
    }

    /// The fold keeps the difference an edit made before the upgrade:
    /// a version's write time raised in a format-5 vault (a clear column
    /// its "V" term covered) is still named after the upgrade.
    @Test func theUpgradeDoesNotLaunderAnEarlierEdit() throws {
        let vBox = try populated()
        let v = vBox.vault
        try setBack(v, toFormat: 5)
        try v.store.write { db in try db.execute(sql: "UPDATE fieldVersion SET writtenAt = writtenAt + 1") }
        let upgraded = try reopen(v)
        let problems = try macProblems(upgraded)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains("current field versions") == true, "\(problems)")
        #expect(throws: CofferError.self) { try upgraded.exportBundle(to: upgraded.path + ".cb") }
    }

    /// Setting a format-6 vault back to format 5 by hand (header,
    /// user_version, migration record) — to have an edit folded away —
    /// leaves a MAC that matches nothing.
    @Test func aDowngradeToFormatFiveIsDetected() throws {
        let vBox = try populated()
        let v = vBox.vault
        try v.store.writeImmediate { db in
            try db.execute(sql: "UPDATE fieldVersion SET writtenAt = writtenAt + 1")
            try db.execute(sql: "UPDATE vault SET formatVersion = 5")
            try setBackSchema(db, toFormat: 5)
        }
        // The key says the vault is format 7: refused at unlock.
        let refused = #expect(throws: CofferError.self) { try reopen(v) }
        #expect(refused?.kind == .badData && refused?.message.contains("format number was set back") == true, "\(String(describing: refused))")
        // With a wrapping from before format 7 (an older copy's), the
        // unlock goes on and the vault MAC still catches the edit.
        try v.store.writeImmediate { db in try wrapAsLegacy(v, db, passphrase: SecretBytes(copying: Array("pw".utf8))) }
        let again = try reopen(v)
        #expect(!(try macProblems(again)).isEmpty)
        #expect(throws: CofferError.self) { try again.exportBundle(to: again.path + ".cb") }
    }

    /// Each clear column of a current version, changed with sqlite3, and a
    /// version copied to an item id that has no row: the MAC names it.
    @Test(arguments: [
        ("UPDATE fieldVersion SET writtenAt = writtenAt + 1", "item rows"),
        ("UPDATE fieldVersion SET isTombstone = 1 - isTombstone", "item rows"),
        ("UPDATE fieldVersion SET vector = (SELECT vector FROM fieldVersion ORDER BY counter DESC LIMIT 1)", "item rows"),
        ("DELETE FROM fieldVersion WHERE registerId = (SELECT registerId FROM fieldVersion LIMIT 1)", "item rows"),
        ("INSERT INTO fieldHistory SELECT *, 0 FROM fieldVersion LIMIT 1", "history"),
        (
            "INSERT INTO fieldVersion SELECT randomblob(16), registerId, replicaId, counter, vector, writtenAt, isTombstone, payload FROM fieldVersion LIMIT 1",
            "of no item"
        ),
    ])
    func versionEditsAreNamed(statement: String, named: String) throws {
        let vBox = try populated()
        let v = vBox.vault
        // As the sqlite3 shell does it: foreign keys not enforced.
        var config = Configuration()
        config.foreignKeysEnabled = false
        let q = try DatabaseQueue(path: v.path, configuration: config)
        try q.write { db in try db.execute(sql: statement) }
        try q.close()
        let problems = try macProblems(v)
        #expect(problems.contains { $0.contains(named) }, "\(statement): \(problems)")
        #expect(throws: CofferError.self) { try v.exportBundle(to: v.path + ".cb") }
    }
}
