import CofferCrypto
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// Restored vault files and local-only round trips at the library level
/// (docs/sync.md, "Copied and restored vault files", "Local-only items").
@Suite("restored vault files and local-only writers (library)")
struct RestoredVaultTests {
    /// Replaces the file's contents in place (same inode), like `cp backup vault`.
    static func restoreInPlace(_ path: String, from backup: [UInt8]) throws {
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.truncate(atOffset: 0)
        try h.write(contentsOf: Data(backup))
        try h.close()
    }

    static func username(_ v: Vault) throws -> String? { try v.item(named: "db").field("username")?.value }

    static func login(_ user: String) -> ItemDraft {
        ItemDraft(name: "db", type: .login, fields: [Field(name: "username", value: user, isSecret: false)])
    }

    @Test func theWriteMarkCatchesAnInPlaceRestoreBeforeTheNextWrite() throws {
        let box = BundleSandbox()
        var a = try box.newVault()
        try a.add(Self.login("u0"))
        let backup = box.bytes("a.coffer")
        let old = try a.replicaID()
        var e = ItemEdit()
        e.setFields = [Field(name: "username", value: "lost", isSecret: false)]
        try a.edit("db", e)
        try Self.restoreInPlace(box.path("a.coffer"), from: backup)
        a = try VaultFile.open(path: box.path("a.coffer")).unlock(passphrase: box.passphrase)
        let change = try a.claimReplica()
        #expect(change?.reason == .restoredInPlace && change?.old == old)
        #expect(try a.replicaID() != old)
    }

    @Test func aFolderThatSawMoreOfThisIDMovesTheReusedWrites() throws {
        let box = BundleSandbox()
        var a = try box.newVault()
        try a.add(Self.login("u0"))
        try a.exportBundle(to: box.path("a1.cb"))
        let b = try VaultFile.clone(box, from: "a1.cb", to: "b.coffer")
        let backup = box.bytes("a.coffer")
        let old = try a.replicaID()
        var e = ItemEdit()
        e.setFields = [Field(name: "username", value: "before-restore", isSecret: false)]
        try a.edit("db", e)
        try a.exportBundle(to: box.path("a2.cb"))
        try b.importBundle(at: box.path("a2.cb"))
        // Restored in place, and the write mark restored with it (gone).
        try Self.restoreInPlace(box.path("a.coffer"), from: backup)
        unlink(WriteMark.path(forVault: box.path("a.coffer")))
        a = try VaultFile.open(path: box.path("a.coffer")).unlock(passphrase: box.passphrase)
        var e2 = ItemEdit()
        e2.setFields = [Field(name: "url", value: "after-restore", isSecret: false)]
        try a.edit("db", e2) // reuses the dot of the lost write
        #expect(try a.replicaID() == old)
        try b.exportBundle(to: box.path("b.cb"))
        let r = try a.importBundle(at: box.path("b.cb"))
        #expect(r.rebinding?.reason == .restored(moved: 1))
        #expect(try a.replicaID() != old)
        try a.importBundle(at: box.path("a2.cb"))
        #expect(try Self.username(a) == "before-restore")
        #expect(try a.item(named: "db").field("url")?.value == "after-restore")
        // Back to b: both writes there too, nothing claimed twice.
        try a.exportBundle(to: box.path("a3.cb"))
        try b.importBundle(at: box.path("a3.cb"))
        #expect(try b.item(named: "db").field("url")?.value == "after-restore")
        #expect(try Self.username(b) == "before-restore")
        // old:2 is the lost write (username); the write made after the
        // restore carries the new id.
        let new = try a.replicaID()
        let dots = try a.state(of: "db").dots
        #expect(dots.contains(Dot(replica: old, counter: 2)))
        #expect(dots.contains(Dot(replica: new, counter: 1)))
        #expect(!dots.contains { $0.replica == old && $0.counter > 2 })
    }

    @Test func ordinaryExchangesNeverLookLikeARestore() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(Self.login("u0"))
        try a.exportBundle(to: box.path("a1.cb"))
        let b = try VaultFile.clone(box, from: "a1.cb", to: "b.coffer")
        for i in 0..<3 {
            var e = ItemEdit()
            e.setFields = [Field(name: "username", value: "a\(i)", isSecret: false)]
            try a.edit("db", e)
            try a.exportBundle(to: box.path("a.cb"))
            #expect(try b.importBundle(at: box.path("a.cb")).rebinding == nil)
            try b.exportBundle(to: box.path("b.cb"))
            #expect(try a.importBundle(at: box.path("b.cb")).rebinding == nil)
            // Its own older bundle is no restore either.
            #expect(try a.importBundle(at: box.path("a1.cb")).rebinding == nil)
        }
        #expect(try a.claimReplica() == nil && b.claimReplica() == nil)
    }

    /// Switching back to sync takes a counter, so a backup from before the
    /// switch is behind its write mark and takes a new id (and new private
    /// writers) before it writes.
    @Test func aBackupFromBeforeASwitchBackIsCaught() throws {
        let box = BundleSandbox()
        var a = try box.newVault()
        try a.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "v", isSecret: true)], policy: .localOnly))
        let backup = box.bytes("a.coffer")
        let writer = Set(try a.state(of: "k").dots.map(\.replica))
        var e = ItemEdit()
        e.policy = .sync
        try a.edit("k", e)
        try Self.restoreInPlace(box.path("a.coffer"), from: backup)
        a = try VaultFile.open(path: box.path("a.coffer")).unlock(passphrase: box.passphrase)
        var e2 = ItemEdit()
        e2.setFields = [Field(name: "key", value: "v2", isSecret: true)]
        try a.edit("k", e2)
        // The new write uses a new private writer, not the one the lost
        // file may have published.
        let fresh = Set(try a.state(of: "k").dots.map(\.replica)).subtracting(writer)
        #expect(fresh.count == 1)
        #expect(try !fresh.contains(a.replicaID()))
    }

    @Test func localOnlyWritesUseAPrivateWriterThatNoBundleClaims() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(Self.login("u0"))
        let me = try a.replicaID()
        var lo = ItemEdit()
        lo.policy = .localOnly
        try a.edit("db", lo)
        var e = ItemEdit()
        e.setFields = [Field(name: "username", value: "private", isSecret: false)]
        try a.edit("db", e)
        let writers = Set(try a.state(of: "db").dots.map(\.replica)).subtracting([me])
        #expect(writers.count == 1)
        try a.exportBundle(to: box.path("a.cb"))
        let header = try Vault.inspectBundle(at: box.path("a.cb")).header
        for w in writers { #expect(header.summary[w] == 0) }
        // The add (never exported before the switch) moved to the private
        // writer too: no own dot of this item is claimed while it is away.
        #expect(try a.state(of: "db").dots.allSatisfy { $0.replica != me })
    }
}

extension VaultFile {
    /// A clone in the sandbox, unlocked.
    static func clone(_ box: BundleSandbox, from bundle: String, to name: String) throws -> Vault {
        _ = try Vault.clone(bundleAt: box.path(bundle), to: box.path(name), passphrase: box.passphrase)
        return try VaultFile.open(path: box.path(name)).unlock(passphrase: box.passphrase)
    }
}
