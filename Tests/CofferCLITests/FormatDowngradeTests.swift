import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 24, item 1: a vault that once had integrity data can never be
/// treated as one that never had. `UPDATE vault SET formatVersion=1;
/// DELETE FROM vaultIntegrity;` added to any keyless edit made the next
/// unlock rebuild the integrity data around the edited rows, and `verify`
/// then called the vault sound. The master key's wrapping now says that
/// the vault has integrity data (`coffer-wrap-v3`, vault format 7), so the
/// set-back file is refused (docs/threat-model.md, "Edits of the vault
/// file"; docs/key-hierarchy.md, "Wrapping the master key").
@Suite("vault format set back by hand")
struct FormatDowngradeTests {
    static let setBackToFormatOne = "UPDATE vault SET formatVersion = 1; DELETE FROM vaultIntegrity;"

    func home(_ items: [(String, String)]) -> TestHome {
        let home = TestHome()
        home.initVault()
        for (name, secret) in items {
            let r = home.unlocked(["add", name, "--type", "api-key", "--secret", "key"], stdin: secret + "\n")
            #expect(r.status == 0, "add failed: \(r)")
        }
        return home
    }

    /// The review's case: a rotated-out key moved back from history, then
    /// the format number set back and the integrity data deleted.
    @Test func aRotatedOutKeyIsNotServedAfterASetBack() throws {
        let home = home([("a", "OLD-KEY")])
        #expect(home.unlocked(["edit", "a", "--secret", "key"], stdin: "NEW-KEY\n").status == 0)
        VaultTamperingTests.sql(home.vaultPath, VaultTamperingTests.moveHistoryBack + "\n" + Self.setBackToFormatOne)
        let before = home.vaultBytes()
        for args in [["get", "a"], ["verify"], ["ls"], ["export", "--out", home.path("x.cb")]] {
            let r = home.unlocked(args)
            VaultTamperingTests.expectModified(r, notShowing: ["OLD-KEY", "NEW-KEY"])
            #expect(r.stderr.contains("format number was set back or its integrity data removed"), "\(r)")
        }
        #expect(home.vaultBytes() == before, "a refused unlock changed the vault")
        #expect(!FileManager.default.fileExists(atPath: home.path("x.cb")))
    }

    /// A deleted item brought back and a local-only item made `sync`, both
    /// with the set-back: refused the same way.
    @Test func otherEditsWithASetBackAreRefused() throws {
        let home = home([("gone", "GONE-SECRET"), ("device", "DEVICE-SECRET")])
        #expect(home.unlocked(["rm", "gone"]).status == 0)
        VaultTamperingTests.sql(
            home.vaultPath,
            """
            UPDATE item SET isDeleted = 0;
            UPDATE item SET policy = 'sync';
            UPDATE replica SET counter = 1000000000 WHERE replicaId != (SELECT replicaId FROM localReplica);
            \(Self.setBackToFormatOne)
            """)
        VaultTamperingTests.expectModified(home.unlocked(["get", "gone"]), notShowing: ["GONE-SECRET"])
        VaultTamperingTests.expectModified(home.unlocked(["export", "--out", home.path("x.cb")]))
    }

    /// Only the format number set back (integrity data kept): refused too.
    @Test(arguments: [1, 5, 6]) func aFormatNumberSetBackIsRefused(format: Int) throws {
        let home = home([("a", "SECRET-A")])
        VaultTamperingTests.sql(home.vaultPath, "UPDATE vault SET formatVersion = \(format);")
        VaultTamperingTests.expectModified(home.unlocked(["get", "a"]), notShowing: ["SECRET-A"])
    }

    /// Through a session (no passphrase, so no wrapping to look at): a
    /// vault without integrity data is never rebuilt; the session is
    /// refused and the passphrase unlock then names the edit.
    @Test func aSessionNeverRebuildsIntegrityData() throws {
        let home = home([("work/openai", "sk-live")])
        let token = try SessionTests.unlock(home)
        #expect(SessionTests.get(home, token: token).status == 0)
        VaultTamperingTests.sql(home.vaultPath, Self.setBackToFormatOne)
        let before = home.vaultBytes()
        let r = SessionTests.get(home, token: token)
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.contains("has no integrity data"), "\(r)")
        #expect(!r.stdout.contains("sk-live"))
        #expect(home.vaultBytes() == before)
        VaultTamperingTests.expectModified(home.unlocked(["get", "work/openai"]), notShowing: ["sk-live"])
    }

    /// A new vault is format 8 and verifies; `passwd` and `rekey` keep it
    /// so (their wrappings are bound), and the set-back is still caught
    /// after each.
    @Test func passwdAndRekeyKeepTheBinding() throws {
        let home = home([("a", "SECRET-A")])
        let v = home.unlocked(["verify", "--json"])
        #expect(v.status == 0, "\(v)")
        #expect(v.stdout.contains("\"formatVersion\":8") || v.stdout.contains("\"formatVersion\" : 8"), "\(v)")
        let newFile = home.path("new-passphrase.txt")
        try (home.passphrase + "\n").write(toFile: newFile, atomically: true, encoding: .utf8)
        let p = home.unlocked(["passwd", "--new-passphrase-file", newFile, "--kdf-memory", "8M", "--kdf-iterations", "1"])
        #expect(p.status == 0, "\(p)")
        let k = home.unlocked(["rekey"])
        #expect(k.status == 0, "\(k)")
        #expect(home.unlocked(["get", "a"]).out == "SECRET-A")
        #expect(home.unlocked(["verify"]).status == 0)
        VaultTamperingTests.sql(home.vaultPath, Self.setBackToFormatOne)
        VaultTamperingTests.expectModified(home.unlocked(["get", "a"]), notShowing: ["SECRET-A"])
    }
}
