import CofferTestSupport
import Foundation
import Testing

/// A sync folder or git remote reset to an older file of a member
/// (docs/sharing.md, "A folder or remote reset to older files"): `sync`
/// refuses it with rule `publication-counter` even though the older file
/// brings nothing new, and leaves the vault as it was.
@Suite("coffer sync: a folder or remote reset to a member's older file")
struct FolderRollbackCLITests {
    typealias F = SyncFixture

    /// The files in `dir` written by the replica whose id (hex) starts the name.
    static func files(of replica: String, in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix(replica) }.sorted()
    }

    /// This vault's replica id (hex), from `coffer status --json`.
    static func replicaID(_ home: TestHome, vault: String) -> String {
        let r = home.run(["status", "--json", "--vault", vault])
        let obj = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]
        let id = (obj?["replicaId"] as? String) ?? ""
        #expect(id.count == 32, "\(r)")
        return id
    }

    @Test("a member's file replaced by its older copy in the sync folder: sync refuses it (65, publication-counter), the vault unchanged")
    func olderFileInFolder() throws {
        let (home, _, _) = SignedWritesCLITests.team()
        let shared = home.path("shared")
        F.expectOK(home.unlocked(["sync", shared]))
        F.expectOK(home.unlocked(["sync", shared, "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", shared]))
        let bob = Self.replicaID(home, vault: home.path("b.coffer"))
        let old = Self.files(of: bob, in: shared)
        #expect(!old.isEmpty)
        let saved = home.path("saved")
        try FileManager.default.createDirectory(atPath: saved, withIntermediateDirectories: true)
        for f in old { try FileManager.default.copyItem(atPath: shared + "/" + f, toPath: saved + "/" + f) }

        // bob writes and publishes; alice and carol merge it.
        F.expectOK(home.unlocked(["add", "svc/bob", "--type", "api-key", "--field", "key=newer", "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", shared, "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", shared]))
        F.expectOK(home.unlocked(["sync", shared, "--vault", "c.coffer"]))
        #expect(home.unlocked(["get", "svc/bob"]).stdout == "newer\n")
        let current = home.path("current")
        try FileManager.default.createDirectory(atPath: current, withIntermediateDirectories: true)
        for f in Self.files(of: bob, in: shared) { try FileManager.default.moveItem(atPath: shared + "/" + f, toPath: current + "/" + f) }

        // The folder is reset: bob's older files are back, his newer gone.
        for f in old { try FileManager.default.copyItem(atPath: saved + "/" + f, toPath: shared + "/" + f) }
        let before = home.vaultBytes()
        let folderBefore = F.fingerprint(shared)
        for _ in 0..<2 {
            let r = home.unlocked(["sync", shared])
            #expect(r.status == 65, "\(r)")
            #expect(r.stderr.contains("breaks the bundle rule publication-counter"), "\(r)")
            #expect(r.stderr.contains("member 'bob'") && r.stderr.contains("served an older file of that member"), "\(r)")
            #expect(r.stderr.contains("coffer: hint: nothing of it was imported; put that member's newer files back"), "\(r)")
            #expect(r.stderr.contains("coffer: hint: the folder was reset to older files of a member"), "\(r)")
            #expect(r.stderr.components(separatedBy: "publication-counter").count == 2, "one line for bob's newest older file: \(r)")
            #expect(home.vaultBytes() == before)
            #expect(F.fingerprint(shared) == folderBefore)
        }
        // A dry run says the same.
        let dry = home.unlocked(["sync", shared, "--dry-run"])
        #expect(dry.status == 65 && dry.stderr.contains("publication-counter"), "\(dry)")
        // carol (read-only, publishes nothing) refuses it the same way.
        let carolBefore = home.vaultBytes(home.path("c.coffer"))
        let c = home.unlocked(["sync", shared, "--vault", "c.coffer"])
        #expect(c.status == 65 && c.stderr.contains("publication-counter"), "\(c)")
        #expect(home.vaultBytes(home.path("c.coffer")) == carolBefore)
        // `import` of that file says the same.
        let newestOld = shared + "/" + old.last!
        let imp = home.unlocked(["import", newestOld])
        #expect(imp.status == 65 && imp.stderr.contains("publication-counter"), "\(imp)")

        // The older file changed by a byte: no accusation of a rollback, the
        // signature is what fails.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: newestOld))
        bytes[bytes.count - 100] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: newestOld))
        let forged = home.unlocked(["sync", shared])
        #expect(forged.status == 65, "\(forged)")
        #expect(forged.stderr.contains("breaks the bundle rule signature") && !forged.stderr.contains("publication-counter"), "\(forged)")
        #expect(home.vaultBytes() == before)

        // bob's newer files back: the sync is quiet again.
        for f in Self.files(of: bob, in: shared) { try FileManager.default.removeItem(atPath: shared + "/" + f) }
        for f in try FileManager.default.contentsOfDirectory(atPath: current) {
            try FileManager.default.moveItem(atPath: current + "/" + f, toPath: shared + "/" + f)
        }
        F.expectOK(home.unlocked(["sync", shared]))
        #expect(home.vaultBytes() == before)
    }

    @Test("the member syncs again into the reset folder: its next file is newer, the others take it")
    func memberRepublishes() throws {
        let (home, _, _) = SignedWritesCLITests.team()
        let shared = home.path("shared")
        F.expectOK(home.unlocked(["sync", shared]))
        F.expectOK(home.unlocked(["sync", shared, "--vault", "b.coffer"]))
        let bob = Self.replicaID(home, vault: home.path("b.coffer"))
        let old = Self.files(of: bob, in: shared)
        let saved = old.map { (name: $0, data: FileManager.default.contents(atPath: shared + "/" + $0) ?? Data()) }
        F.expectOK(home.unlocked(["add", "svc/bob", "--type", "api-key", "--field", "key=newer", "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", shared, "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", shared]))
        for f in Self.files(of: bob, in: shared) { try FileManager.default.removeItem(atPath: shared + "/" + f) }
        for s in saved { try s.data.write(to: URL(fileURLWithPath: shared + "/" + s.name)) }
        #expect(home.unlocked(["sync", shared]).status == 65)
        // bob's replica sees its own file behind what it holds and writes a new one.
        F.expectOK(home.unlocked(["sync", shared, "--vault", "b.coffer"]))
        let r = home.unlocked(["sync", shared])
        #expect(r.status == 0, "\(r)")
        #expect(home.unlocked(["get", "svc/bob"]).stdout == "newer\n")
    }

    @Test(.enabled(if: SyncGitTests.hasGit, "git is not installed"))
    func remoteResetToOlderCommit() throws {
        let (home, _, _) = SignedWritesCLITests.team()
        let bare = home.path("remote.git")
        typealias G = SyncGitTests.Git
        G(home: home, dir: home.root.path).run(["init", "-q", "--bare", bare])
        // carol's work tree is a clone of the empty remote: her read-only
        // replica commits nothing and takes the remote's branch.
        for w in ["wa", "wb", "wc"] { G(home: home, dir: home.root.path).run(["clone", "-q", bare, home.path(w)]) }
        F.expectOK(home.unlocked(["sync", home.path("wa"), "--git"]))
        F.expectOK(home.unlocked(["sync", home.path("wb"), "--git", "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", home.path("wc"), "--git", "--vault", "c.coffer"]))
        let gb = G(home: home, dir: home.path("wb"))
        let older = gb.run(["rev-parse", "HEAD"]).out
        let branch = gb.run(["rev-parse", "--abbrev-ref", "HEAD"]).out

        F.expectOK(home.unlocked(["add", "svc/bob", "--type", "api-key", "--field", "key=newer", "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", home.path("wb"), "--git", "--vault", "b.coffer"]))
        F.expectOK(home.unlocked(["sync", home.path("wc"), "--git", "--vault", "c.coffer"]))
        #expect(home.unlocked(["get", "svc/bob", "--vault", "c.coffer"]).stdout == "newer\n")

        // The remote is reset to the older commit; carol's new work tree
        // (a fresh clone) has only bob's older file.
        gb.run(["push", "-q", "--force", "origin", "\(older):refs/heads/\(branch)"])
        G(home: home, dir: home.root.path).run(["clone", "-q", bare, home.path("wc2")])
        let before = home.vaultBytes(home.path("c.coffer"))
        let r = home.unlocked(["sync", home.path("wc2"), "--git", "--vault", "c.coffer"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("breaks the bundle rule publication-counter") && r.stderr.contains("member 'bob'"), "\(r)")
        #expect(r.stderr.contains("coffer: hint: the remote was reset to older files of a member"), "\(r)")
        #expect(home.vaultBytes(home.path("c.coffer")) == before)
        #expect(home.unlocked(["get", "svc/bob", "--vault", "c.coffer"]).stdout == "newer\n")
    }
}
