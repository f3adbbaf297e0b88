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
}
