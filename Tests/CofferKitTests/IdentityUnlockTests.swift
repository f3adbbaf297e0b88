import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Vault format 8 (docs/key-hierarchy.md, "Unlocking with a member
/// identity"): the master key sealed to a member identity in the file.
@Suite("identity unlock (vault format 8)")
struct IdentityUnlockTests {
    static func sql(_ path: String, _ body: (Database) throws -> Void) throws {
        let q = try DatabaseQueue(path: path)
        try q.write(body)
    }

    static func member(_ name: String) -> MemberIdentity { MemberIdentity(name: name, secretKey: .generate()) }

    @Test func theIdentityUnlocksWithoutThePassphraseAndTheRowIsOneTheFileHolds() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("work/openai", "sk-1"))
        let bob = Self.member("bob")
        try a.allowUnlock(by: bob.publicKey)
        let file = try VaultFile.open(path: box.path("a.coffer"))
        #expect(try file.unlockIdentities() == [bob.publicKey])
        let v = try file.unlock(identity: bob)
        #expect(try v.item(named: "work/openai").field("key")?.value == "sk-1")
        // The passphrase still unlocks, and the MAC covers the new row.
        let p = try VaultFile.open(path: box.path("a.coffer")).unlock(passphrase: box.passphrase)
        #expect(try p.verify().isSound)
        #expect(try VaultFile.open(path: box.path("a.coffer")).header.formatVersion == 8)
    }

    @Test func anotherIdentityOrAFileWithoutRowsIsRefusedWithExit77() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        let file = try VaultFile.open(path: box.path("a.coffer"))
        #expect(throws: CofferError.self) { try file.unlock(identity: Self.member("x")) }
        do { _ = try file.unlock(identity: Self.member("x")) } catch { #expect(error.exitCode == 77 && error.message.contains("not cloned with one")) }
        try a.allowUnlock(by: Self.member("bob").publicKey)
        do {
            _ = try VaultFile.open(path: box.path("a.coffer")).unlock(identity: Self.member("eve"))
            Issue.record("another identity unlocked")
        } catch { #expect(error.exitCode == 77, "\(error)") }
    }

    @Test func aRowAlteredOrAddedOutsideCofferIsDetectedNeverUsed() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "sk-1"))
        let bob = Self.member("bob")
        try a.allowUnlock(by: bob.publicKey)
        let before = try Data(contentsOf: box.dir.appendingPathComponent("a.coffer"))
        // Altered: bob's row replaced by a random key sealed to bob with
        // the right binding (the attacker knows the public identity).
        let forged = try bob.publicKey.seal(SecretBytes.random(count: 32), prefix: KeyHierarchy.sealPrefix(vault: a.vaultID, epoch: a.keyEpoch))
        try Self.sql(box.path("a.coffer")) { db in
            try db.execute(sql: "UPDATE identityUnlock SET sealedKey = ?", arguments: [Data(forged)])
        }
        do {
            _ = try VaultFile.open(path: box.path("a.coffer")).unlock(identity: bob)
            Issue.record("a forged key unlocked")
        } catch { #expect(error.exitCode == 65 && error.message.contains("modified outside coffer"), "\(error)") }
        // Added: eve's own row, with a key she made.
        try before.write(to: box.dir.appendingPathComponent("a.coffer"))
        let eve = Self.member("eve")
        let eveBox = try eve.publicKey.seal(SecretBytes.random(count: 32), prefix: KeyHierarchy.sealPrefix(vault: a.vaultID, epoch: a.keyEpoch))
        try Self.sql(box.path("a.coffer")) { db in
            try db.execute(sql: "INSERT INTO identityUnlock VALUES (?, ?)", arguments: [Data(eve.publicKey.payload), Data(eveBox)])
        }
        for who in [eve, bob] {
            do {
                _ = try VaultFile.open(path: box.path("a.coffer")).unlock(identity: who)
                Issue.record("\(who.name) unlocked a file with a row added outside coffer")
            } catch { #expect(error.exitCode == 65 && error.message.contains("modified outside coffer"), "\(who.name): \(error)") }
        }
    }

    @Test func aRekeySealsTheNewKeyToTheIdentity() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "sk-1"))
        let bob = Self.member("bob")
        try a.allowUnlock(by: bob.publicKey)
        let (rekeyed, _) = try a.file.rekey(a, passphrase: box.passphrase, sessionDirectories: [])
        #expect(rekeyed.keyEpoch.number == 1)
        let v = try VaultFile.open(path: box.path("a.coffer")).unlock(identity: bob)
        #expect(try v.item(named: "k").field("key")?.value == "sk-1")
        #expect(try v.verify().isSound)
    }

    @Test func aMemberClonesWithItsIdentityAdoptsRotationsAndIsRefusedOnceRemoved() throws {
        let box = BundleSandbox()
        let a = try box.newVault()
        try a.add(apiKey("k", "sk-1"))
        let bob = Self.member("bob")
        let carol = Self.member("carol")
        // A signs what it publishes: it is a member too.
        let alice = try a.createMemberIdentity(name: "alice")
        try a.addMember(name: "alice", publicKey: alice.publicKey)
        try a.addMember(name: "bob", publicKey: bob.publicKey)
        try a.addMember(name: "carol", publicKey: carol.publicKey)
        let sync = box.path("sync")
        try FileManager.default.createDirectory(atPath: sync, withIntermediateDirectories: true)
        _ = try a.sync(dir: sync)
        let bundle = try #require(try FileManager.default.contentsOfDirectory(atPath: sync).first { $0.hasSuffix(".coffer-bundle") })
        // A stranger is refused, and no file is left behind.
        #expect(throws: CofferError.self) { try Vault.clone(bundleAt: sync + "/" + bundle, to: box.path("x.coffer"), identity: Self.member("eve")) }
        #expect(!FileManager.default.fileExists(atPath: box.path("x.coffer")))
        _ = try Vault.clone(bundleAt: sync + "/" + bundle, to: box.path("b.coffer"), identity: bob)
        _ = try Vault.clone(bundleAt: sync + "/" + bundle, to: box.path("c.coffer"), identity: carol)
        let b = try VaultFile.open(path: box.path("b.coffer")).unlock(identity: bob)
        #expect(try b.item(named: "k").field("key")?.value == "sk-1")
        // The passphrase wrapping is the one received.
        #expect(try VaultFile.open(path: box.path("b.coffer")).header.wrappedMasterKey == a.file.header.wrappedMasterKey)
        // A removes bob: the key rotates; carol adopts it through her box.
        let removal = try a.file.removeMember("bob", from: a, passphrase: box.passphrase, sessionDirectories: [])
        try removal.vault.add(apiKey("after", "sk-2"))
        _ = try removal.vault.sync(dir: sync)
        let c = try VaultFile.open(path: box.path("c.coffer")).unlock(identity: carol)
        let r = try c.sync(dir: sync, identity: carol)
        #expect(r.keyEpochAdopted?.epoch.number == 1)
        let c2 = try VaultFile.open(path: box.path("c.coffer")).unlock(identity: carol)
        #expect(c2.keyEpoch.number == 1)
        #expect(try c2.item(named: "after").field("key")?.value == "sk-2")
        #expect(try c2.verify().isSound)
        // Bob: refused, nothing merged, his file as it was.
        let before = box.bytes("b.coffer")
        do {
            _ = try b.sync(dir: sync, identity: bob)
            Issue.record("a removed member adopted the new key")
        } catch {
            #expect(error.exitCode == 77 && error.message.hasPrefix("you were removed from this vault: the key was rotated on "), "\(error)")
        }
        #expect(box.bytes("b.coffer") == before)
        #expect(try VaultFile.open(path: box.path("b.coffer")).unlock(identity: bob).item(named: "k").field("key")?.value == "sk-1")
    }
}
