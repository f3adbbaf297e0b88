import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Vault format 7: the master key's wrapping says that the vault has
/// integrity data (docs/key-hierarchy.md, "Wrapping the master key";
/// issue 24, item 1). The CLI side is `FormatDowngradeTests`.
@Suite("the master key's wrapping binds the vault's integrity data")
struct WrapBindingTests {
    static let pw = SecretBytes(copying: Array("pw".utf8))

    func header(_ v: Vault) throws -> VaultHeader { try v.store.read { db in try Queries.header(db) } }

    /// A new vault is format 8 (format 7 bound the wrapping; 8 added the
    /// tables of signed writes) and its key opens only under coffer-wrap-v3.
    @Test func aNewVaultIsBound() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let h = try header(v)
        #expect(h.formatVersion == VaultStore.formatVersion && h.wrapBinding == .integrity)
        let kdf = KDFParameters(memoryKiB: h.kdfMemoryKiB, iterations: h.kdfIterations, parallelism: h.kdfParallelism)
        #expect(throws: CryptoError.self) {
            try KeyHierarchy.unwrapMasterKey(
                passphrase: Self.pw, vault: h.vaultID, kdf: kdf, salt: h.kdfSalt, wrapped: h.wrappedMasterKey, binding: .legacy)
        }
        _ = try KeyHierarchy.unwrapMasterKey(
            passphrase: Self.pw, vault: h.vaultID, kdf: kdf, salt: h.kdfSalt, wrapped: h.wrappedMasterKey, binding: .integrity)
    }

    /// The wrapping of an older copy (legacy AD) put back into a format-7
    /// file: refused, never opened as an older vault.
    @Test func anOlderWrappingInAFormatSevenFileIsRefused() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "A", isSecret: true)]))
        try v.store.writeImmediate { db in try wrapAsLegacy(v, db, passphrase: Self.pw) }
        let e = #expect(throws: CofferError.self) { try VaultFile.open(path: v.path).unlock(passphrase: Self.pw) }
        #expect(e?.kind == .badData && e?.message.contains("from before vault format 7") == true, "\(String(describing: e))")
    }

    /// A genuine format-1 vault (legacy wrapping, no integrity data) is
    /// upgraded by its first passphrase unlock, once: it is format 7 and
    /// bound afterwards, and setting it back again is refused.
    @Test func aGenuineFormatOneVaultUpgradesOnce() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "A", isSecret: true)]))
        let setBack = "DELETE FROM vaultIntegrity; UPDATE item SET record = NULL; UPDATE vault SET formatVersion = 1"
        try v.store.writeImmediate { db in
            try db.execute(sql: setBack)
            try wrapAsLegacy(v, db, passphrase: Self.pw)
        }
        // Through a session (the master key alone): never rebuilt.
        let locked = #expect(throws: CofferError.self) { try VaultFile.open(path: v.path).unlock(masterKey: v.masterKey) }
        #expect(locked?.kind == .locked && locked?.message.contains("has no integrity data") == true, "\(String(describing: locked))")
        let file = try VaultFile.open(path: v.path)
        let up = try file.unlock(passphrase: Self.pw)
        #expect(try up.item(named: "a").primaryField?.value == "A")
        let report = try up.verify()
        #expect(report.isSound && report.formatVersion == VaultStore.formatVersion, "\(report)")
        // The file object took the new header: a passwd right after works.
        #expect(file.header.formatVersion == VaultStore.formatVersion && file.header.wrapBinding == .integrity)
        try file.rewrapMasterKey(of: up, new: SecretBytes(copying: Array("pw2".utf8)))
        let again = try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array("pw2".utf8)))
        #expect(try again.verify().isSound)
        try again.store.writeImmediate { db in try db.execute(sql: setBack) }
        let e = #expect(throws: CofferError.self) { try VaultFile.open(path: v.path).unlock(passphrase: SecretBytes(copying: Array("pw2".utf8))) }
        #expect(e?.kind == .badData && e?.message.contains("format number was set back") == true, "\(String(describing: e))")
    }

    /// A format-6 vault (legacy wrapping, current integrity data) opened
    /// through a session stays as it is; the passphrase unlock binds it.
    @Test func aFormatSixVaultIsBoundByThePassphraseUnlock() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "A", isSecret: true)]))
        try v.write { db, mac in
            var h = try Queries.header(db)
            let kdf = KDFParameters(memoryKiB: h.kdfMemoryKiB, iterations: h.kdfIterations, parallelism: h.kdfParallelism)
            let w = try KeyHierarchy.wrapMasterKey(v.masterKey, passphrase: Self.pw, vault: v.vaultID, kdf: kdf, binding: .legacy)
            h.kdfSalt = w.salt
            h.wrappedMasterKey = w.wrapped
            h.formatVersion = 6
            try Queries.updateHeaderWrapping(db, header: h, mac: mac)
        }
        let viaSession = try VaultFile.open(path: v.path).unlock(masterKey: v.masterKey)
        #expect(try viaSession.verify().isSound)
        #expect(try header(viaSession).formatVersion == 6)
        let bound = try VaultFile.open(path: v.path).unlock(passphrase: Self.pw)
        let report = try bound.verify()
        #expect(report.isSound && report.formatVersion == VaultStore.formatVersion, "\(report)")
        #expect(try header(bound).wrapBinding == .integrity)
        // Its bundles are format 4 from then on.
        let out = v.path + ".cb"
        defer { unlink(out) }
        try bound.exportBundle(to: out)
        #expect(try Vault.inspectBundle(at: out).header.formatVersion == 4)
    }
}
