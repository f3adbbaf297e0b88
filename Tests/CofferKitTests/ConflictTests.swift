import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Two replicas of one vault (the second a copy of the first's file, which
/// takes its own replica id) and a direct state-level exchange between
/// them, standing in for bundles.
final class TwoReplicas: @unchecked Sendable {
    let a: Vault
    let b: Vault
    let folder = TemporaryDirectory(prefix: "coffer-conflicts")
    var dir: URL { folder.url }
    static let passphrase = "correct horse battery staple"

    init() throws {
        let pa = folder.path("a.coffer")
        let pb = folder.path("b.coffer")
        a = try VaultFile.create(path: pa, passphrase: SecretBytes(copying: Array(Self.passphrase.utf8)), kdf: FastKDF.parameters)
        try FileManager.default.copyItem(atPath: pa, toPath: pb)
        b = try VaultFile.open(path: pb).unlock(passphrase: SecretBytes(copying: Array(Self.passphrase.utf8)))
    }

    /// Merges every item of `from` into `into`, as importing a full bundle does.
    static func push(_ from: Vault, _ into: Vault) throws {
        let (states, summary) = try from.store.read { db in
            (try Queries.itemRows(db, includeDeleted: true).map { ($0, try Queries.itemState(db, id: $0.id)) }, try Queries.summary(db))
        }
        try into.write { db, mac in
            for (row, incoming) in states {
                let oldRow = try Queries.itemRow(db, id: row.id)
                let old = try Queries.itemState(db, id: row.id)
                let new = old.merged(with: incoming)
                let r = try into.derivedRow(
                    for: new, policy: oldRow?.policy ?? row.policy, createdAt: oldRow?.createdAt ?? row.createdAt,
                    updatedAt: max(oldRow?.updatedAt ?? 0, row.updatedAt))
                try into.save(db, row: r, old: oldRow == nil ? nil : old, new: new, now: Clock.nowMillis(), mac: mac)
            }
            try Queries.noteSeen(db, vector: summary, at: Clock.nowMillis(), mac: mac)
        }
    }

    func exchange() throws {
        try Self.push(a, b)
        try Self.push(b, a)
    }

    /// Every item's full state, for comparing replicas.
    static func dump(_ v: Vault) throws -> [ItemID: ItemState] {
        try v.store.read { db in
            Dictionary(uniqueKeysWithValues: try Queries.itemRows(db, includeDeleted: true).map { ($0.id, try Queries.itemState(db, id: $0.id)) })
        }
    }
}

@Suite("conflicts and resolve")
struct ConflictTests {
    func key(_ v: String) -> Field { Field(name: "key", value: v, isSecret: true) }

    @Test func copiedFileTakesANewReplicaID() throws {
        let r = try TwoReplicas()
        let before = try r.b.replicaID()
        #expect(before == (try r.a.replicaID()))
        #expect(try r.a.claimReplica() == nil)
        let change = try #require(try r.b.claimReplica())
        #expect(change.old == before)
        #expect(change.reason == .otherFile)
        #expect(try r.b.replicaID() != before)
        // Said once: the new binding sticks.
        #expect(try r.b.claimReplica() == nil)
    }

    @Test func writesUnderThisIDSeenElsewhereTakeANewID() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "x", type: .custom))
        let id = try r.a.replicaID()
        // A bundle reported writes under a's id beyond a's counter.
        try r.a.write { db, mac in
            try Queries.noteSeen(db, vector: VersionVector([id: 7]), at: nil, mac: mac)
        }
        let change = try #require(try r.a.claimReplica())
        #expect(change.reason == .reusedElsewhere && change.old == id)
        #expect(try r.a.claimReplica() == nil)
    }

    @Test func aVaultReachedThroughASymlinkIsNotACopy() throws {
        let r = try TwoReplicas()
        let link = r.dir.appendingPathComponent("link.coffer").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: r.a.path)
        let viaLink = try VaultFile.open(path: link).unlock(passphrase: SecretBytes(copying: Array(TwoReplicas.passphrase.utf8)))
        #expect(try viaLink.claimReplica() == nil)
    }

    @Test func writesRebindWithoutBeingAsked() throws {
        let r = try TwoReplicas()
        let old = try r.b.replicaID()
        try r.b.add(ItemDraft(name: "x", type: .note, fields: [Field(name: "text", value: "t", isSecret: false)]))
        let state = try r.b.state(of: "x")
        #expect(state.dots.allSatisfy { $0.replica != old })
    }

    @Test func differentFieldsMergeWithoutConflict() throws {
        let r = try TwoReplicas()
        try r.a.add(
            ItemDraft(
                name: "db", type: .login, fields: [Field(name: "username", value: "u", isSecret: false), Field(name: "password", value: "p0", isSecret: true)]))
        try r.exchange()
        var e1 = ItemEdit()
        e1.setFields = [Field(name: "username", value: "alice", isSecret: false)]
        var e2 = ItemEdit()
        e2.setFields = [Field(name: "password", value: "p1", isSecret: true)]
        try r.a.edit("db", e1)
        try r.b.edit("db", e2)
        try r.exchange()
        for v in [r.a, r.b] {
            let item = try v.item(named: "db")
            #expect(item.field("username")?.value == "alice")
            #expect(item.field("password")?.value == "p1")
            #expect(item.conflicts.isEmpty)
            #expect(try v.conflicts().isEmpty)
        }
        #expect(try TwoReplicas.dump(r.a) == (try TwoReplicas.dump(r.b)))
    }

    @Test func sameFieldConflictIsListedAndResolved() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "work/openai", type: .apiKey, fields: [key("sk-0")]))
        try r.exchange()
        var e1 = ItemEdit()
        e1.setFields = [key("sk-A")]
        var e2 = ItemEdit()
        e2.setFields = [key("sk-B")]
        try r.a.edit("work/openai", e1)
        try r.b.edit("work/openai", e2)
        try r.exchange()
        #expect(try TwoReplicas.dump(r.a) == (try TwoReplicas.dump(r.b)))
        // Both show the same side.
        #expect(try r.a.item(named: "work/openai").field("key") == (try r.b.item(named: "work/openai").field("key")))

        let hidden = try r.a.conflicts()
        #expect(hidden.count == 1)
        let c = try #require(hidden.first)
        #expect(c.kind == .field && c.field == "key" && c.isSecret && c.item == "work/openai")
        #expect(c.sides.count == 2 && c.sides.allSatisfy { $0.value == nil })
        #expect(c.sides.filter(\.isShown).count == 1)
        let shown = try r.a.conflicts(revealSecrets: true)[0]
        #expect(Set(shown.sides.compactMap(\.value)) == ["sk-A", "sk-B"])
        #expect(Set(shown.sides.map(\.replica)) == [try r.a.replicaID(), try r.b.replicaID()])

        // Keep the side that is not shown, on replica b.
        let other = try #require(shown.sides.first { !$0.isShown })
        try r.b.resolve("work/openai", field: nil, with: .keep(other.number))
        #expect(try r.b.conflicts().isEmpty)
        try r.exchange()
        for v in [r.a, r.b] {
            #expect(try v.conflicts().isEmpty)
            #expect(try v.item(named: "work/openai").field("key")?.value == other.value)
            #expect(try v.item(named: "work/openai").field("key")?.isSecret == true)
        }
        #expect(try TwoReplicas.dump(r.a) == (try TwoReplicas.dump(r.b)))
    }

    @Test func resolveWithANewValueSupersedesAllSides() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "n", type: .note, fields: [Field(name: "text", value: "0", isSecret: false)]))
        try r.exchange()
        var e1 = ItemEdit()
        e1.setFields = [Field(name: "text", value: "a", isSecret: false)]
        var e2 = ItemEdit()
        e2.unsetFields = ["text"]
        try r.a.edit("n", e1)
        try r.b.edit("n", e2)
        try r.exchange()
        let c = try r.a.conflicts()
        #expect(c.count == 1)
        #expect(Set(c[0].sides.map(\.action)) == [.value, .removed])
        let done = try r.a.resolve("n", field: "text", with: .value("merged"))
        #expect(done.value == "merged")
        let state = try r.a.state(of: "n")
        let versions = state.registers.filter { !$0.key.isMetadata }.values.first ?? []
        #expect(versions.count == 1)
        // Its vector covers both sides.
        try r.exchange()
        #expect(try r.b.item(named: "n").field("text")?.value == "merged")
        #expect(try r.b.conflicts().isEmpty)
    }

    @Test func renameConflictResolvedThroughAtName() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "old", type: .note))
        try r.exchange()
        var e1 = ItemEdit()
        e1.rename = "new-a"
        var e2 = ItemEdit()
        e2.rename = "new-b"
        try r.a.edit("old", e1)
        try r.b.edit("old", e2)
        try r.exchange()
        let c = try r.a.conflicts()
        #expect(c.count == 1 && c[0].field == "@name")
        let shownName = try r.a.list()[0].name
        try r.a.resolve(shownName, field: "@name", with: .value("final"))
        try r.exchange()
        #expect(try r.b.list().map(\.name) == ["final"])
        #expect(try r.b.conflicts().isEmpty)
    }

    @Test func deleteAgainstEditKeepsTheItemFlagged() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "gh", type: .apiKey, fields: [key("t0")]))
        try r.exchange()
        try r.a.delete("gh")
        var e = ItemEdit()
        e.setFields = [key("t1")]
        try r.b.edit("gh", e)
        try r.exchange()
        for v in [r.a, r.b] {
            let item = try v.item(named: "gh")
            #expect(item.hasDeleteConflict)
            #expect(item.field("key")?.value == "t1")
            let c = try v.conflicts()
            #expect(c.count == 1 && c[0].kind == .delete && c[0].field == "@deleted")
            #expect(c[0].sides.map(\.action) == [.delete, .edit])
            #expect(c[0].sides[1].field == "key")
        }
        // Keep the delete: the item goes, everywhere.
        try r.b.resolve("gh", field: "@deleted", with: .keep(1))
        try r.exchange()
        for v in [r.a, r.b] {
            #expect(try !v.contains("gh"))
            #expect(try v.conflicts().isEmpty)
        }
    }

    @Test func deleteConflictKeptByKeepingTheEdit() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "gh", type: .apiKey, fields: [key("t0")]))
        try r.exchange()
        try r.a.delete("gh")
        var e = ItemEdit()
        e.setFields = [key("t1")]
        try r.b.edit("gh", e)
        try r.exchange()
        #expect(throws: CofferError.self) { try r.a.resolve("gh", field: nil, with: .value("x")) }
        try r.a.resolve("gh", field: nil, with: .keep(2))
        try r.exchange()
        for v in [r.a, r.b] {
            let item = try v.item(named: "gh")
            #expect(!item.hasDeleteConflict)
            #expect(item.field("key")?.value == "t1")
            #expect(try v.conflicts().isEmpty)
        }
    }

    @Test func concurrentCreationWithOneNameIsANameClash() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "aws", type: .apiKey, fields: [key("A")]))
        try r.b.add(ItemDraft(name: "aws", type: .apiKey, fields: [key("B")]))
        try r.exchange()
        let c = try r.a.conflicts()
        #expect(c.count == 1)
        #expect(c[0].kind == .name && c[0].item == "aws" && c[0].sides.count == 2)
        #expect(c[0].sides.allSatisfy { $0.itemID != nil && $0.value?.hasPrefix("id:") == true })
        // The name is ambiguous until one is renamed.
        #expect { try r.a.resolve("aws", field: nil, with: .keep(1)) } throws: { ($0 as? CofferError)?.kind == .ambiguousName }
        let second = try #require(c[0].sides[1].itemID)
        var e = ItemEdit()
        e.rename = "aws-2"
        try r.a.edit("id:" + second.hex, e)
        try r.exchange()
        for v in [r.a, r.b] {
            #expect(try v.conflicts().isEmpty)
            #expect(try v.list().map(\.name) == ["aws", "aws-2"])
        }
    }

    @Test func badResolveChangesNothing() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "k", type: .apiKey, fields: [key("0")]))
        try r.exchange()
        var e1 = ItemEdit()
        e1.setFields = [key("1")]
        var e2 = ItemEdit()
        e2.setFields = [key("2")]
        try r.a.edit("k", e1)
        try r.b.edit("k", e2)
        try r.exchange()
        let before = try TwoReplicas.dump(r.a)
        func kind(_ body: () throws -> Void) -> CofferError.Kind? {
            do {
                try body()
                return nil
            } catch { return (error as? CofferError)?.kind }
        }
        #expect(kind { try r.a.resolve("k", field: nil, with: .keep(3)) } == .usage)
        #expect(kind { try r.a.resolve("k", field: nil, with: .keep(0)) } == .usage)
        #expect(kind { try r.a.resolve("k", field: "nope", with: .keep(1)) } == .usage)
        #expect(kind { try r.a.resolve("missing", field: nil, with: .keep(1)) } == .itemNotFound)
        try r.a.add(ItemDraft(name: "calm", type: .note))
        let withCalm = try TwoReplicas.dump(r.a)
        #expect(kind { try r.a.resolve("calm", field: nil, with: .keep(1)) } == .usage)
        #expect(try TwoReplicas.dump(r.a) == withCalm)
        #expect(withCalm.count == before.count + 1)
    }
}

@Suite("merge preview (--dry-run)")
struct MergePreviewTests {
    func key(_ v: String) -> Field { Field(name: "key", value: v, isSecret: true) }

    @Test func previewNamesEveryKindOfChangeAndWritesNothing() throws {
        let r = try TwoReplicas()
        try r.a.add(ItemDraft(name: "gh", type: .apiKey, fields: [key("t0")]))
        try r.a.add(ItemDraft(name: "db", type: .login, fields: [Field(name: "username", value: "u", isSecret: false)]))
        try r.a.add(ItemDraft(name: "old", type: .custom))
        try r.exchange()
        // a: delete gh, change db's username, rename old, add aws.
        try r.a.delete("gh")
        var e1 = ItemEdit()
        e1.setFields = [Field(name: "username", value: "alice", isSecret: false)]
        try r.a.edit("db", e1)
        var e2 = ItemEdit()
        e2.rename = "new"
        try r.a.edit("old", e2)
        try r.a.add(ItemDraft(name: "aws", type: .apiKey, fields: [key("A")]))
        // b: edit gh concurrently, also create aws.
        var e3 = ItemEdit()
        e3.setFields = [key("t1")]
        try r.b.edit("gh", e3)
        try r.b.add(ItemDraft(name: "aws", type: .apiKey, fields: [key("B")]))
        let bundle = r.dir.appendingPathComponent("a.cb").path
        try r.a.exportBundle(to: bundle)
        let before = try TwoReplicas.dump(r.b)
        let (reports, preview) = try r.b.previewImport(paths: [bundle])
        #expect(try TwoReplicas.dump(r.b) == before)
        #expect(reports.count == 1 && reports[0].changed == 3 && reports[0].added == 1)
        let byName = Dictionary(uniqueKeysWithValues: preview.items.map { ($0.name, $0) })
        let gh = try #require(byName["gh"])
        #expect(gh.kind == .changed && gh.opensDeleteConflict)
        let db = try #require(byName["db"])
        #expect(db.fields == [.init(field: "username", kind: .changed, value: "alice", isSecret: false, sides: 1)])
        let renamed = try #require(byName["new"])
        #expect(renamed.oldName == "old")
        #expect(renamed.fields.map(\.field) == ["@name"])
        let aws = try #require(byName["aws"])
        #expect(aws.kind == .added && aws.opensNameClash)
        #expect(aws.fields.first { $0.field == "key" }?.value == nil)
        // The real import does what the preview said.
        let done = try r.b.importBundle(at: bundle)
        #expect(done.changed == 3 && done.added == 1)
        #expect(try r.b.item(named: "gh").hasDeleteConflict)
        #expect(try r.b.conflicts().contains { $0.kind == .name && $0.item == "aws" })
    }
}
