import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Format 4: the vault MAC covers sync's bookkeeping (`localExport`,
/// `localOnlyWriter`) and keeps one MAC per area; vaults of formats 2 and 3
/// are upgraded on unlock without forgetting an earlier edit (issue 12).
@Suite("vault MAC: sync bookkeeping and areas")
struct SyncBookkeepingMACTests {
    static let passphrase = "pw"
    /// Bundles and clones of one test (removed after it).
    let scratch = TemporaryDirectory(prefix: "coffer-bk")

    func secret(_ v: String) -> Field { Field(name: "key", value: v, isSecret: true) }

    func setting(_ f: Field) -> ItemEdit {
        var e = ItemEdit()
        e.setFields = [f]
        return e
    }

    func policy(_ p: SyncPolicy) -> ItemEdit {
        var e = ItemEdit()
        e.policy = p
        return e
    }

    func reopen(_ v: Vault) throws -> Vault {
        try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array(Self.passphrase.utf8)))
    }

    func bundlePath() -> String {
        scratch.path("\(UUID().uuidString.prefix(8)).cb")
    }

    func macProblems(_ v: Vault) throws -> [String] {
        try v.verify().problems.filter { $0.check == .vaultMAC }.map(\.message)
    }

    /// A vault as format 3 left it (``setBack(_:toFormat:)``).
    func makeFormatThree(_ v: Vault) throws { try setBack(v, toFormat: 3) }

    @Test func everyBookkeepingWriteKeepsTheMAC() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "shared", type: .apiKey, fields: [secret("s")]))
        try v.add(ItemDraft(name: "device", type: .apiKey, fields: [secret("d")], policy: .localOnly))
        try v.edit("device", setting(secret("d2")))
        let path = bundlePath()
        defer { unlink(path) }
        try v.exportBundle(to: path)
        let mark = try v.store.read { db in try Queries.exportMark(db) }
        #expect(mark != nil)
        try v.edit("device", policy(.sync))
        try v.edit("shared", policy(.localOnly))
        try v.edit("shared", setting(secret("s2")))
        try v.exportBundle(to: path)
        // A copied file takes a new replica id and new private writers.
        try v.store.write { db in try db.execute(sql: "UPDATE localReplica SET boundHost = 'another-machine'") }
        #expect(try v.claimReplica() != nil)
        let writers = try v.store.read { db in try Queries.localOnlyWriters(db) }
        #expect(writers.count == 1)
        let report = try v.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.formatVersion == VaultStore.formatVersion)
    }

    /// Each covered column, changed without the key, is named by verify
    /// and refused by export.
    @Test(arguments: [
        "UPDATE localExport SET counter = counter + 1000",
        "UPDATE localExport SET counter = 0",
        "DELETE FROM localExport",
        "UPDATE localOnlyWriter SET replicaId = (SELECT replicaId FROM localReplica)",
        "UPDATE localOnlyWriter SET itemId = (SELECT itemId FROM item WHERE policy = 'sync')",
        "DELETE FROM localOnlyWriter",
        "INSERT INTO localOnlyWriter SELECT itemId, replicaId FROM fieldVersion WHERE itemId NOT IN (SELECT itemId FROM localOnlyWriter) LIMIT 1",
    ])
    func anEditOfTheBookkeepingIsNamed(_ statement: String) throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "shared", type: .apiKey, fields: [secret("s")]))
        try v.add(ItemDraft(name: "device", type: .apiKey, fields: [secret("d")], policy: .localOnly))
        let path = bundlePath()
        defer { unlink(path) }
        try v.exportBundle(to: path)
        #expect(try v.verify().isSound)
        try v.store.write { db in try db.execute(sql: statement) }
        let problems = try macProblems(v)
        #expect(problems.count == 1, "\(problems)")
        let table = statement.contains("localExport") ? "localExport" : "localOnlyWriter"
        #expect(problems.first?.contains("sync's bookkeeping") == true && problems.first?.contains(table) == true, "\(problems)")
        #expect(throws: CofferError.self) { try v.exportBundle(to: path) }
    }

    @Test func verifyNamesEachChangedArea() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [secret("1")]))
        try v.edit("a", setting(secret("2")))
        try v.store.write { db in
            try db.execute(sql: "UPDATE replica SET counter = counter + 5")
            try db.execute(sql: "UPDATE fieldHistory SET supersededAt = supersededAt + 1")
        }
        let problems = try macProblems(v)
        #expect(problems.count == 2, "\(problems)")
        #expect(problems.contains { $0.contains("replica table") })
        #expect(problems.contains { $0.contains("history versions") })
    }

    @Test func aFormatThreeVaultIsUpgradedOnUnlock() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "shared", type: .apiKey, fields: [secret("s")]))
        try v.add(ItemDraft(name: "device", type: .apiKey, fields: [secret("d")], policy: .localOnly))
        let path = bundlePath()
        defer { unlink(path) }
        try v.exportBundle(to: path)
        #expect(try v.store.read { db in try Queries.exportMark(db) } != nil)
        try makeFormatThree(v)
        // The older format's MAC checks out under the older coverage only:
        // what the upgrade must fold in is exactly the bookkeeping.
        let upgraded = try reopen(v)
        let report = try upgraded.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.formatVersion == VaultStore.formatVersion)
        #expect(try upgraded.store.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == VaultStore.formatVersion)
        #expect(try upgraded.item(named: "device").primaryField?.value == "d")
        // Covered from then on.
        try upgraded.store.write { db in try db.execute(sql: "UPDATE localExport SET counter = counter + 7") }
        let after = try macProblems(upgraded)
        #expect(after.first?.contains("sync's bookkeeping") == true, "\(after)")
    }

    /// An edit made to a format-3 vault before its upgrade stays detected:
    /// the upgrade folds the old MAC, it does not recompute it.
    @Test func theUpgradeDoesNotLaunderAnEarlierEdit() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [secret("1")]))
        try makeFormatThree(v)
        try v.store.write { db in try db.execute(sql: "UPDATE replica SET counter = counter + 1000") }
        let upgraded = try reopen(v)
        let problems = try macProblems(upgraded)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains("before this vault was upgraded") == true, "\(problems)")
        #expect(throws: CofferError.self) { try upgraded.exportBundle(to: bundlePath()) }
    }

    /// Setting a format-4 vault back to format 3 (header, areas, migration
    /// record) to have a changed bookkeeping folded in again is detected.
    @Test func aDowngradeToFormatThreeIsDetected() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "device", type: .apiKey, fields: [secret("d")], policy: .localOnly))
        let path = bundlePath()
        defer { unlink(path) }
        try v.exportBundle(to: path)
        try v.store.writeImmediate { db in
            try db.execute(sql: "UPDATE localExport SET counter = counter + 1000")
            try db.execute(sql: "UPDATE vault SET formatVersion = 3")
            try setBackSchema(db, toFormat: 3)
        }
        // The key says the vault is format 7: refused at unlock.
        let refused = #expect(throws: CofferError.self) { try reopen(v) }
        #expect(refused?.kind == .badData && refused?.message.contains("format number was set back") == true, "\(String(describing: refused))")
        // With a wrapping from before format 7 (an older copy's), the
        // unlock goes on and the vault MAC still catches the edit.
        try v.store.writeImmediate { db in try wrapAsLegacy(v, db, passphrase: SecretBytes(copying: Array(Self.passphrase.utf8))) }
        let again = try reopen(v)
        #expect(!(try again.verify().isSound))
        #expect(throws: CofferError.self) { try again.exportBundle(to: path) }
    }

    /// The per-area MACs removed outside coffer: refused on the next write
    /// and by export, named by verify.
    @Test func missingAreaMACsAreRefused() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [secret("1")]))
        try v.store.write { db in try db.execute(sql: "UPDATE vaultIntegrity SET areaMacs = NULL") }
        #expect(try macProblems(v).contains { $0.contains("per-area parts are missing") })
        #expect(throws: CofferError.self) { try v.add(ItemDraft(name: "b", type: .apiKey, fields: [secret("2")])) }
        #expect(throws: CofferError.self) { try v.exportBundle(to: bundlePath()) }
    }

    /// `coffer-bench clone --without-integrity` (the cost baseline of
    /// docs/benchmarks.md) really leaves the records and MAC terms out, and
    /// `--without-mac` the MAC terms only: the vaults they make are refused;
    /// with both on, the same path makes a sound vault.
    @Test func theBenchmarkBaselineLeavesTheIntegrityDataOut() throws {
        let aBox = try TemporaryVault()
        let a = aBox.vault
        for i in 0..<10 { try a.add(ItemDraft(name: "i\(i)", type: .apiKey, fields: [secret("v\(i)")])) }
        let path = bundlePath()
        defer { unlink(path) }
        try a.exportBundle(to: path)
        let dir = scratch.url.appendingPathComponent("clones")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let pw = SecretBytes(copying: Array(Self.passphrase.utf8))
        for integrity in [BulkIntegrity.none, .recordsOnly, .full] {
            let target = dir.appendingPathComponent("\(integrity).coffer").path
            let report = try Replication._cloneForBenchmarks(
                bundleAt: path, to: target, passphrase: pw, records: integrity != .none, mac: integrity == .full)
            #expect(report.added == 10)
            let b = try VaultFile.open(path: target).unlock(passphrase: pw)
            let records = try b.store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE record IS NOT NULL") }
            #expect(records == (integrity == .none ? 0 : 10), "\(integrity)")
            let verdict = try b.verify()
            #expect(verdict.isSound == (integrity == .full), "\(integrity)")
        }
    }

    /// A clone counts what `ls` will list while importing (no second pass
    /// over the vault) and finds the username and url fields by name: both
    /// as a listing of the new vault shows them.
    @Test func aCloneCountsListedItemsAndKeepsUsernamesOnTheWayIn() throws {
        let aBox = try TemporaryVault()
        let a = aBox.vault
        try a.add(
            ItemDraft(
                name: "site", type: .login,
                fields: [
                    Field(name: "username", value: "me", isSecret: false), Field(name: "url", value: "https://x", isSecret: false),
                    Field(name: "password", value: "pw", isSecret: true),
                ]))
        try a.add(
            ItemDraft(
                name: "hidden", type: .login,
                fields: [Field(name: "username", value: "who", isSecret: true), Field(name: "url", value: "https://y", isSecret: false)]))
        try a.add(ItemDraft(name: "gone", type: .apiKey, fields: [secret("g")]))
        try a.delete("gone")
        try a.add(ItemDraft(name: "k", type: .apiKey, fields: [secret("k")]))
        try a.edit("k", setting(Field(name: "url", value: "https://k", isSecret: false)))
        let path = bundlePath()
        defer { unlink(path) }
        try a.exportBundle(to: path)
        let target = scratch.path("clone/c.coffer")
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let pw = SecretBytes(copying: Array(Self.passphrase.utf8))
        let report = try Vault.clone(bundleAt: path, to: target, passphrase: pw)
        let b = try VaultFile.open(path: target).unlock(passphrase: pw)
        let listed = try b.list()
        #expect(report.listedItems == listed.count)
        #expect(listed.map(\.name) == ["hidden", "k", "site"])
        #expect(listed.map(\.username) == [nil, nil, "me"])
        #expect(listed.map(\.url) == ["https://y", "https://k", "https://x"])
        #expect(listed == (try a.list()))
        #expect(try b.verify().isSound)
    }
}
