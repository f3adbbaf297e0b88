import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Library-level tests of shell sessions (the CLI tests cover the commands).
@Suite("Session library")
struct SessionKitTests {
    final class Sandbox {
        let folder = TemporaryDirectory(prefix: "coffer-sessionkit")
        var root: String { folder.url.path }
        var vaultPath: String { root + "/vault.coffer" }
        var directory: SessionDirectory { SessionDirectory(path: root + "/sessions") }
    }

    @Test func base64URLRoundTrip() {
        for n in 0..<40 {
            let bytes = Random.bytes(n)
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(text == foundation)
        }
        #expect(Base64URL.decode("a b") == nil)
        #expect(Base64URL.decode("AB") == nil, "non-canonical trailing bits are refused")
    }

    @Test func durations() {
        #expect(SessionDuration.parse("15m") == 900)
        #expect(SessionDuration.parse("1h30m") == 5400)
        #expect(SessionDuration.parse("2s") == 2)
        #expect(SessionDuration.parse("1d") == 86400)
        #expect(SessionDuration.parse("15") == nil)
        #expect(SessionDuration.parse("m") == nil)
        #expect(SessionDuration.parse("5x") == nil)
        #expect(SessionDuration.format(5400) == "1h30m")
        let c = try? CofferConfig.parse("session.timeout = 5m # short\n\nfuture.key = 1\n")
        #expect(c?.sessionTimeout == 300)
        #expect((try? CofferConfig.parse("session.timeout")) == nil)
    }

    /// Ending the old key's sessions is a rule of the vault, kept by the
    /// library (issue 31): an app that rekeys through CofferKit leaves no
    /// session of the old key on disk, and sessions of other vaults stay.
    @Test func rekeyEndsTheOldKeysSessions() throws {
        let box = Sandbox()
        let pw = SecretBytes(copying: Array("pw".utf8))
        let vault = try VaultFile.create(path: box.vaultPath, passphrase: pw, kdf: FastKDF.parameters)
        let other = try VaultFile.create(path: box.root + "/other.coffer", passphrase: pw, kdf: FastKDF.parameters)
        let s = try Session.start(vault: vault, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        let kept = try Session.start(vault: other, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        let (_, report) = try vault.file.rekey(vault, passphrase: pw, sessionDirectories: [box.directory])
        #expect(report.sessionsEnded == 1)
        #expect(throws: CofferError.self) { _ = try Session.unlock(file: try VaultFile.open(path: box.vaultPath), token: s.token, directory: box.directory) }
        _ = try Session.unlock(file: try VaultFile.open(path: box.root + "/other.coffer"), token: kept.token, directory: box.directory)
    }

    /// Adopting another replica's rekey through a session (issue 29): the
    /// library ends the vault's other sessions, as a rekey does, and carries
    /// the adopting session over to the new key — same token, same
    /// lifetime — so the shell that adopted keeps working.
    @Test func adoptionCarriesTheAdoptingSessionOver() throws {
        let box = Sandbox()
        let pw = SecretBytes(copying: Array("pw".utf8))
        var a = try VaultFile.create(path: box.root + "/a.coffer", passphrase: pw, kdf: FastKDF.parameters)
        _ = try a.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "v0", isSecret: true)]))
        try a.exportBundle(to: box.root + "/full.cb")
        _ = try Vault.clone(bundleAt: box.root + "/full.cb", to: box.vaultPath, passphrase: pw)
        (a, _) = try a.file.rekey(a, passphrase: pw, sessionDirectories: [])
        try a.exportBundle(to: box.root + "/rekeyed.cb")
        let b = try VaultFile.open(path: box.vaultPath).unlock(passphrase: pw)
        let mine = try Session.start(vault: b, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        let other = try Session.start(vault: b, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        let before = try #require(box.directory.sessions().first { mine.token.contains($0.id) })
        let viaSession = try Session.unlock(file: try VaultFile.open(path: box.vaultPath), token: mine.token, directory: box.directory)
        let (adopted, report) = try viaSession.adoptKeyEpoch(ofBundleAt: box.root + "/rekeyed.cb", passphrase: pw, sessionDirectories: [box.directory])
        #expect(report.sessionCarriedOver && report.sessionsEnded == 1)
        #expect(throws: CofferError.self) {
            _ = try Session.unlock(file: try VaultFile.open(path: box.vaultPath), token: other.token, directory: box.directory)
        }
        let again = try Session.unlock(file: try VaultFile.open(path: box.vaultPath), token: mine.token, directory: box.directory)
        #expect(again.keyEpoch == a.keyEpoch && adopted.keyEpoch == a.keyEpoch)
        #expect(try again.item(named: "k").field("key")?.value == "v0")
        let after = try #require(box.directory.sessions().first { mine.token.contains($0.id) })
        #expect(after.createdAt == before.createdAt && after.lifetimeEndsAt == before.lifetimeEndsAt && after.idleTimeout == before.idleTimeout)
    }

    @Test func startUnlockEnd() throws {
        let box = Sandbox()
        let vault = try VaultFile.create(path: box.vaultPath, passphrase: SecretBytes(copying: Array("pw".utf8)), kdf: FastKDF.parameters)
        _ = try vault.add(ItemDraft(name: "a", type: .apiKey, fields: [Field(name: "key", value: "v1", isSecret: true)]))
        let started = try Session.start(vault: vault, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        #expect(started.token.hasPrefix("cs1."))
        let file = try VaultFile.open(path: box.vaultPath)
        let again = try Session.unlock(file: file, token: started.token, directory: box.directory)
        #expect(try again.item(named: "a").field("key")?.value == "v1")
        // Idle and lifetime limits, checked against a given clock.
        let later = Date().addingTimeInterval(61)
        #expect(throws: CofferError.self) { _ = try Session.unlock(file: file, token: started.token, directory: box.directory, refresh: false, now: later) }
        let s2 = try Session.start(vault: vault, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        #expect(box.directory.sessions().count == 1, "the expired session's file was wiped")
        if case .success(let info) = Session.check(file: file, token: s2.token, directory: box.directory) {
            #expect(info.idleTimeout == 60)
        } else {
            Issue.record("a fresh session checks out")
        }
        #expect(try Session.end(token: s2.token, directory: box.directory))
        #expect(box.directory.sessions().isEmpty)
    }

    @Test func passphraseChangeKeepsMasterKey() throws {
        let box = Sandbox()
        let old = SecretBytes(copying: Array("old".utf8))
        let new = SecretBytes(copying: Array("new".utf8))
        let vault = try VaultFile.create(path: box.vaultPath, passphrase: old, kdf: FastKDF.parameters)
        let s = try Session.start(vault: vault, idleTimeout: 60, maxLifetime: 3600, directory: box.directory)
        let file = try VaultFile.open(path: box.vaultPath)
        try file.changePassphrase(current: old, new: new)
        let reopened = try VaultFile.open(path: box.vaultPath)
        #expect(throws: CofferError.self) { _ = try reopened.unlock(passphrase: old) }
        _ = try reopened.unlock(passphrase: new)
        _ = try Session.unlock(file: reopened, token: s.token, directory: box.directory)
        // A stale second change (it read the old header) is refused, not applied.
        #expect(throws: CofferError.self) { try file.changePassphrase(current: old, new: SecretBytes(copying: Array("x".utf8))) }
    }
}
