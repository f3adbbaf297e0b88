import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15, "The second machine": a machine without a vault, a folder of
/// another vault, cloning from a folder or several bundles, a missing
/// sync folder.
@Suite("second machine, black-box")
struct SecondMachineTests {
    typealias F = SyncFixture

    @Test func syncWithoutAVaultSuggestsCloneAndWritesNothing() {
        let (a, _) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let fresh = TestHome()
        let before = F.fingerprint(dir)
        let r = fresh.unlocked(["sync", dir])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("coffer: error: no vault at"), "\(r)")
        #expect(r.stderr.contains("coffer clone \(dir)") && r.stderr.contains("not `coffer init`"), "\(r)")
        #expect(F.fingerprint(dir) == before)
        #expect(!FileManager.default.fileExists(atPath: fresh.vaultPath))
        // Without bundles in the folder, the usual hint (init) stays.
        let empty = fresh.path("empty")
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let r2 = fresh.unlocked(["sync", empty])
        #expect(r2.status == 66 && !r2.stderr.contains("coffer clone"), "\(r2)")
    }

    @Test func aDifferentVaultNeverWritesIntoTheFolder() {
        let (a, _) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let other = TestHome()
        other.initVault()
        F.expectOK(other.unlocked(["add", "x", "--type", "custom", "--field", "v=1"]))
        let before = F.fingerprint(dir)
        let r = other.unlocked(["sync", dir])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("holds the bundles of a different vault") && r.stderr.contains("nothing was written"), "\(r)")
        #expect(r.stderr.contains("coffer clone \(dir)"), "\(r)")
        #expect(!r.stderr.contains("damaged"), "\(r)")
        #expect(F.fingerprint(dir) == before)
        #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1)
    }

    @Test func aForeignBundleAmongOursIsCalledADifferentVault() {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let other = TestHome()
        other.initVault()
        F.expectOK(other.unlocked(["export", "--out", dir + "/stray.coffer-bundle"]))
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=new"]))
        let r = a.unlocked(["sync", dir])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("stray.coffer-bundle is a bundle of a different vault"), "\(r)")
        #expect(r.stderr.contains("keep one vault's bundles per sync folder") && !r.stderr.contains("damaged"), "\(r)")
        // Everything else was synced.
        _ = b.unlocked(["sync", dir])
        #expect(b.unlocked(["get", "db", "--field", "username"]).out == "new")
    }

    @Test func cloneFromAFolderOrSeveralBundles() {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        // b's bundle holds an item a's bundle does not.
        F.expectOK(b.unlocked(["add", "b/only", "--type", "custom", "--field", "v=b"]))
        F.expectOK(b.unlocked(["sync", dir]))
        #expect(F.replicas(in: dir).count == 2)

        let c = TestHome()
        let r = c.unlocked(["clone", dir])
        F.expectOK(r)
        #expect(c.unlocked(["get", "b/only", "--field", "v"]).out == "b")
        #expect(c.unlocked(["get", "db", "--field", "username"]).out == "u0")

        // Several files (the documented glob): the newest full one makes
        // the vault, the others are merged.
        let d = TestHome()
        let files = F.bundles(in: dir)
        let r2 = d.unlocked(["clone"] + files)
        F.expectOK(r2)
        #expect(r2.stderr.contains("merged"), "\(r2)")
        #expect(d.unlocked(["get", "b/only", "--field", "v"]).out == "b")
        let ls = d.unlocked(["ls"]).stdout
        #expect(ls.contains("db") && ls.contains("work/openai"))
        F.expectOK(d.unlocked(["sync", dir]))
        #expect(F.replicas(in: dir).count == 3)
    }

    @Test func cloneRefusesMixedVaultsAndFoldersWithoutBundles() {
        let (a, _) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let other = TestHome()
        other.initVault()
        F.expectOK(other.unlocked(["export", "--out", other.path("other.coffer-bundle")]))
        let c = TestHome()
        let mixed = c.unlocked(["clone", F.bundles(in: dir)[0], other.path("other.coffer-bundle")])
        #expect(mixed.status == 65 && mixed.stderr.contains("2 different vaults"), "\(mixed)")
        let empty = c.path("empty")
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let none = c.unlocked(["clone", empty])
        #expect(none.status == 66 && none.stderr.contains("holds no Coffer bundle"), "\(none)")
        let noArgs = c.unlocked(["clone"])
        #expect(noArgs.status == 64, "\(noArgs)")
        #expect(!FileManager.default.fileExists(atPath: c.vaultPath))
    }

    @Test func syncCreatesAMissingFolder() {
        let a = TestHome()
        a.initVault()
        let dir = a.path("not/yet/there")
        let dry = a.unlocked(["sync", dir, "--dry-run"])
        #expect(dry.status == 66 && dry.stderr.contains("creates it"), "\(dry)")
        #expect(!FileManager.default.fileExists(atPath: dir))
        let r = a.unlocked(["sync", dir])
        F.expectOK(r)
        #expect(r.stderr.contains("created the sync folder \(dir) (mode 0700)"), "\(r)")
        var st = stat()
        #expect(stat(dir, &st) == 0 && (st.st_mode & 0o777) == 0o700)
        #expect(F.bundles(in: dir).count == 1)
    }
}
