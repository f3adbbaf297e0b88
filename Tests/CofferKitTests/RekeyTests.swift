import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Master-key rotation at the library level (docs/key-hierarchy.md
/// §Master-key rotation, docs/sync.md §Master-key rotation).
@Suite("master-key rotation (library)")
struct RekeyTests {
    static func kind(_ e: any Error) -> CofferError.Kind? { (e as? CofferError)?.kind }
    static func code(_ e: any Error) -> Int32? { (e as? CofferError)?.exitCode }
    static func message(_ e: any Error) -> String { (e as? CofferError)?.message ?? "\(e)" }

    /// Every item decrypted and the dots of its versions, register by
    /// register (the same on every replica once synced).
    static func logical(_ v: Vault) throws -> String {
        var out = ""
        for s in try v.list() {
            let item = try v.item(named: "id:" + s.id.hex)
            out +=
                "\(item.name) \(item.fields.map { "\($0.name)=\($0.value)" }) \(item.conflicts.map { "\($0.field):\($0.sides.map(\.value))" }) \(item.vector)\n"
            let state = try v.state(of: "id:" + s.id.hex)
            for rid in state.registers.keys.sorted() { out += "  \(rid) \(state.registers[rid]!.map(\.dot))\n" }
        }
        return out
    }

    static func open(_ box: BundleSandbox, _ name: String, passphrase: SecretBytes? = nil) throws -> Vault {
        try VaultFile.open(path: box.path(name)).unlock(passphrase: passphrase ?? box.passphrase)
    }

    static func secret(_ v: Vault, _ name: String, _ field: String = "key") throws -> String? {
        try v.item(named: name).field(field)?.value
    }

    static func edit(_ v: Vault, _ name: String, _ field: String, _ value: String, secret: Bool = true) throws {
        var e = ItemEdit()
        e.setFields = [Field(name: field, value: value, isSecret: secret)]
        try v.edit(name, e)
    }

    static func adopt(_ box: BundleSandbox) -> (KeyEpoch, String, Int) throws(CofferError) -> SecretBytes? {
        let p = box.passphrase
        return { _, _, attempt in attempt == 0 ? p : nil }
    }

    /// The raw rows of an item (register ids, name hash), read with SQLite.
    static func rows(_ path: String) throws -> (registers: Set<Data>, nameHashes: Set<Data>, payloads: Set<Data>) {
        let q = try DatabaseQueue(path: path)
        return try q.read { db in
            (
                Set(try Data.fetchAll(db, sql: "SELECT registerId FROM fieldVersion UNION SELECT registerId FROM fieldHistory")),
                Set(try Data.fetchAll(db, sql: "SELECT nameHash FROM item WHERE nameHash IS NOT NULL")),
                Set(try Data.fetchAll(db, sql: "SELECT payload FROM fieldVersion UNION SELECT payload FROM fieldHistory"))
            )
        }
    }

    @Test func rekeyReencryptsEverythingAndKeepsEveryValue() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("work/openai", "sk-1"))
        try Self.edit(a, "work/openai", "key", "sk-2") // sk-1 goes to history
        try a.add(
            ItemDraft(
                name: "mail", type: .login,
                fields: [
                    Field(name: "username", value: "me", isSecret: false), Field(name: "password", value: "pw", isSecret: true),
                    Field(name: "café", value: "nfc name", isSecret: false),
                ]))
        try a.add(apiKey("home/local", "local-secret", policy: .localOnly))
        try a.add(apiKey("gone", "deleted-secret"))
        try a.delete("gone")
        let before = try Self.rows(box.path("a.coffer"))
        let oldMaster = SecretBytes(copying: a.masterKey.revealedBytes())

        let (b, report) = try a.file.rekey(a, passphrase: box.passphrase)
        let me = try a.replicaID()
        #expect(report.previous == .initial && report.epoch.number == 1 && report.epoch.rekeyedBy == me)
        #expect(report.items == 4 && report.historyVersions >= 1)

        // Every register id of a user field, every name hash and every
        // payload changed; metadata register ids (1 to 7) stay.
        let after = try Self.rows(box.path("a.coffer"))
        let userBefore = before.registers.filter { $0.prefix(15) != Data(count: 15) }
        let userAfter = after.registers.filter { $0.prefix(15) != Data(count: 15) }
        #expect(userBefore.count == userAfter.count && userBefore.isDisjoint(with: userAfter))
        #expect(before.nameHashes.count == after.nameHashes.count && before.nameHashes.isDisjoint(with: after.nameHashes))
        #expect(before.payloads.isDisjoint(with: after.payloads))

        for v in [b, try Self.open(box, "a.coffer")] {
            #expect(try Self.secret(v, "work/openai") == "sk-2")
            #expect(try v.history("work/openai").compactMap(\.value).contains("sk-1"))
            #expect(try Self.secret(v, "mail", "password") == "pw")
            #expect(try Self.secret(v, "mail", "café") == "nfc name")
            #expect(try Self.secret(v, "home/local") == "local-secret")
            #expect(try v.item(named: "home/local").policy == .localOnly)
            #expect(try v.contains("gone") == false)
            #expect(try v.list().first { $0.name == "mail" }?.username == "me")
            let check = try v.verify()
            #expect(check.isSound, "\(check.problems)")
            #expect(check.formatVersion == VaultStore.formatVersion)
            #expect(v.keyEpoch == report.epoch)
        }
        // The old master key (a session's) no longer unlocks: exit 77.
        let file = try VaultFile.open(path: box.path("a.coffer"))
        #expect(throws: CofferError.self) { try file.unlock(masterKey: oldMaster) }
        do { _ = try file.unlock(masterKey: oldMaster) } catch { #expect(Self.kind(error) == .locked && Self.code(error) == 77) }
        // Writes go on under the new key; a second rekey goes to epoch 2.
        try b.add(apiKey("after", "new"))
        let (c, second) = try b.file.rekey(b, passphrase: box.passphrase)
        #expect(second.epoch.number == 2 && second.previous == report.epoch)
        #expect(try Self.secret(c, "after") == "new")
        #expect(try c.verify().isSound)
        // A vault object of the old key cannot write what the new key
        // could not read.
        #expect(throws: CofferError.self) { try b.add(apiKey("stale", "x")) }
    }

    @Test func rekeyCanChangeThePassphrase() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "v"))
        let new = SecretBytes(copying: Array("a brand new passphrase".utf8))
        _ = try a.file.rekey(a, passphrase: new)
        #expect(throws: CofferError.self) { try Self.open(box, "a.coffer") }
        #expect(try Self.secret(Self.open(box, "a.coffer", passphrase: new), "k") == "v")
        // A passwd on a rekeyed vault wraps the key for its epoch.
        let third = SecretBytes(copying: Array("and a third passphrase".utf8))
        try VaultFile.open(path: box.path("a.coffer")).changePassphrase(current: new, new: third)
        let v = try Self.open(box, "a.coffer", passphrase: third)
        #expect(try Self.secret(v, "k") == "v")
        #expect(try v.verify().isSound)
    }

    /// Rekey on A; concurrent edits on B and C before they see it; sync all
    /// three both ways: every edit everywhere, old-epoch bundles refused,
    /// verify clean everywhere.
    @Test func editsMadeBeforeSeeingTheRekeyStillMerge() throws {
        let box = BundleSandbox()
        let dir = box.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var a = try box.newVault()
        try a.add(apiKey("shared", "s0"))
        try a.add(ItemDraft(name: "db", type: .login, fields: [Field(name: "username", value: "u0", isSecret: false)]))
        try a.exportBundle(to: box.path("full.cb"))
        var b = try VaultFile.clone(box, from: "full.cb", to: "b.coffer")
        var c = try VaultFile.clone(box, from: "full.cb", to: "c.coffer")
        for v in [a, b, c] { _ = try v.sync(dir: dir) }

        // A rekeys; B and C edit before they see it.
        try b.exportBundle(to: box.path("b-old.cb"))
        (a, _) = try a.file.rekey(a, passphrase: box.passphrase)
        try Self.edit(b, "shared", "key", "from-b") // concurrent with C's edit of the same field
        try b.add(apiKey("only-b", "b-secret"))
        try Self.edit(c, "shared", "key", "from-c")
        try Self.edit(c, "db", "password", "c-pw") // a new field: a new register id
        _ = try c.sync(dir: dir) // C's old-epoch bundle reaches the folder

        // A skips C's old-epoch bundle; an explicit import of one is refused whole.
        let ra = try a.sync(dir: dir, adoptKey: Self.adopt(box))
        #expect(ra.skipped.contains { $0.reason == .olderKeyEpoch })
        #expect(ra.merged.isEmpty)
        let dumpA = try BundleSandbox.dump(a)
        do {
            try a.importBundle(at: box.path("b-old.cb"))
            Issue.record("an old-epoch bundle was imported")
        } catch {
            #expect(Self.kind(error) == .badData && Self.code(error) == 65)
            #expect(Self.message(error).contains("key epoch 0") && Self.message(error).contains("key epoch 1"))
        }
        #expect(try BundleSandbox.dump(a) == dumpA)

        // B and C adopt A's key (translating their own edits) and merge.
        let rb = try b.sync(dir: dir, adoptKey: Self.adopt(box))
        #expect(rb.keyEpochAdopted?.epoch == a.keyEpoch)
        b = try Self.open(box, "b.coffer")
        let rc = try c.sync(dir: dir, adoptKey: Self.adopt(box))
        #expect(rc.keyEpochAdopted?.epoch == a.keyEpoch)
        c = try Self.open(box, "c.coffer")
        for _ in 0..<2 {
            for v in [a, b, c] { _ = try v.sync(dir: dir, adoptKey: Self.adopt(box)) }
        }
        for v in [a, b, c] {
            #expect(v.keyEpoch == a.keyEpoch)
            let shared = try v.item(named: "shared")
            let conflict = shared.conflicts.first { $0.field == "key" }
            let sides: Set<String> = Set((conflict?.sides ?? []).compactMap { (s: ConflictSide) -> String? in s.value })
            #expect(sides == ["from-b", "from-c"], "the concurrent edits of B and C are a conflict on every replica")
            #expect(try Self.secret(v, "only-b") == "b-secret")
            #expect(try Self.secret(v, "db", "password") == "c-pw")
            #expect(try Self.secret(v, "db", "username") == "u0")
            let check = try v.verify()
            #expect(check.isSound, "\(check.problems)")
        }
        // The same versions (by dot) and values everywhere; ciphertexts
        // differ (each replica re-sealed its own copy with fresh nonces).
        #expect(try Self.logical(a) == Self.logical(b))
        #expect(try Self.logical(b) == Self.logical(c))
        // A clone of an epoch-1 bundle opens with the passphrase.
        try a.exportBundle(to: box.path("full-1.cb"))
        let d = try VaultFile.clone(box, from: "full-1.cb", to: "d.coffer")
        #expect(d.keyEpoch == a.keyEpoch)
        #expect(try Self.secret(d, "only-b") == "b-secret")
        #expect(try d.verify().isSound)
    }

    /// Two rekeys made concurrently converge on the one by the larger
    /// replica id, whatever the order.
    @Test func concurrentRekeysConverge() throws {
        let box = BundleSandbox()
        let dir = box.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var a = try box.newVault()
        try a.add(apiKey("k", "v0"))
        try a.exportBundle(to: box.path("full.cb"))
        var b = try VaultFile.clone(box, from: "full.cb", to: "b.coffer")
        (a, _) = try a.file.rekey(a, passphrase: box.passphrase)
        (b, _) = try b.file.rekey(b, passphrase: box.passphrase)
        try Self.edit(a, "k", "from-a", "1")
        try Self.edit(b, "k", "from-b", "2")
        #expect(a.keyEpoch.number == b.keyEpoch.number && a.keyEpoch != b.keyEpoch)
        let winner = max(a.keyEpoch, b.keyEpoch)
        for _ in 0..<2 {
            _ = try a.sync(dir: dir, adoptKey: Self.adopt(box))
            a = try Self.open(box, "a.coffer")
            _ = try b.sync(dir: dir, adoptKey: Self.adopt(box))
            b = try Self.open(box, "b.coffer")
        }
        for v in [a, b] {
            #expect(v.keyEpoch == winner)
            #expect(try Self.secret(v, "k", "from-a") == "1")
            #expect(try Self.secret(v, "k", "from-b") == "2")
            #expect(try v.verify().isSound)
        }
    }

    /// A wrong passphrase for the new key changes nothing.
    @Test func adoptingWithAWrongPassphraseChangesNothing() throws {
        let box = BundleSandbox()
        var a = try box.newVault()
        try a.add(apiKey("k", "v0"))
        try a.exportBundle(to: box.path("full.cb"))
        let b = try VaultFile.clone(box, from: "full.cb", to: "b.coffer")
        (a, _) = try a.file.rekey(a, passphrase: SecretBytes(copying: Array("the new one".utf8)))
        try a.exportBundle(to: box.path("a1.cb"))
        let dump = try BundleSandbox.dump(b)
        do {
            _ = try b.importBundle(at: box.path("a1.cb"))
            Issue.record("a newer-epoch bundle was imported without adopting its key")
        } catch { #expect(Self.kind(error) == .locked) }
        do {
            _ = try b.adoptKeyEpoch(ofBundleAt: box.path("a1.cb"), passphrase: box.passphrase)
            Issue.record("the wrong passphrase opened the new key")
        } catch { #expect(Self.kind(error) == .wrongPassphrase && Self.code(error) == 77) }
        #expect(try BundleSandbox.dump(Self.open(box, "b.coffer")) == dump)
        let (b2, _) = try b.adoptKeyEpoch(ofBundleAt: box.path("a1.cb"), passphrase: SecretBytes(copying: Array("the new one".utf8)))
        try b2.importBundle(at: box.path("a1.cb"))
        #expect(try Self.secret(b2, "k") == "v0")
        #expect(throws: CofferError.self) { try Self.open(box, "b.coffer") } // the old passphrase is gone with the old key
    }

    /// A format-4 vault (what the build before rekey wrote: no keyEpoch
    /// table, user_version 4, header format 4) upgrades on open, stays
    /// sound, and rekeys.
    @Test func aFormat4VaultUpgradesAndRekeys() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "v0"))
        try setBack(a, toFormat: 4, passphrase: box.passphrase)
        let v = try Self.open(box, "a.coffer")
        let (version, format) = try DatabaseQueue(path: box.path("a.coffer")).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Int.fetchOne(db, sql: "SELECT formatVersion FROM vault"))
        }
        #expect(version == VaultStore.formatVersion && format == VaultStore.formatVersion)
        #expect(v.keyEpoch == .initial)
        #expect(try Self.secret(v, "k") == "v0")
        let check = try v.verify()
        #expect(check.isSound, "\(check.problems)")
        let (r, report) = try v.file.rekey(v, passphrase: box.passphrase)
        #expect(report.epoch.number == 1)
        #expect(try Self.secret(r, "k") == "v0")
        #expect(try r.verify().isSound)
    }

    /// The key epoch, its key check and the wrapped key bind each other:
    /// editing the epoch row (or deleting it) leaves a vault that does not
    /// open, never one that opens under the wrong key.
    @Test func editingTheEpochRowIsDetected() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "v0"))
        _ = try a.file.rekey(a, passphrase: box.passphrase)
        let q = try DatabaseQueue(path: box.path("a.coffer"))
        try q.write { db in try db.execute(sql: "DELETE FROM keyEpoch") }
        try q.close()
        do {
            _ = try Self.open(box, "a.coffer")
            Issue.record("a vault without its epoch row opened")
        } catch { #expect(Self.kind(error) == .wrongPassphrase || Self.code(error) == 65) }
    }
}
