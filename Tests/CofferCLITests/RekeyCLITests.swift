import CofferTestSupport
import Foundation
import Testing

/// `coffer rekey`, black-box (docs/user-guide.md "Rotating the master
/// key", docs/sync.md §Master-key rotation): three replicas sharing one
/// sync folder, as three machines would.
@Suite("rekey: master-key rotation", .serialized)
struct RekeyCLITests {
    let shared: String
    let a = TestHome(), b = TestHome(), c = TestHome()
    let keep = TestHome() // owns the shared folder

    init() throws {
        shared = keep.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        a.initVault()
        #expect(a.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-rekey-123\n").status == 0)
        #expect(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "pw-0\n").status == 0)
        #expect(a.unlocked(["sync", shared]).status == 0)
        let first = try FileManager.default.contentsOfDirectory(atPath: shared).filter { $0.hasSuffix(".coffer-bundle") }.map { shared + "/" + $0 }[0]
        for home in [b, c] {
            let r = home.unlocked(["clone", first])
            #expect(r.status == 0, "\(r)")
            #expect(home.unlocked(["sync", shared]).status == 0)
        }
    }

    func get(_ home: TestHome, _ name: String, _ field: String? = nil) -> CLIResult {
        home.unlocked(["get", name] + (field.map { ["--field", $0] } ?? []))
    }

    @Test func rekeyKeepsValuesAndEndsOldSessions() throws {
        let token = try SessionTests.unlock(a)
        #expect(a.run(["get", "work/openai"], env: ["COFFER_SESSION": token]).out == "sk-rekey-123")
        // A session of another shell, kept in a file the rekey must wipe.
        let file = SessionTests.sessionFile(a, token: token)
        let copy = try Data(contentsOf: URL(fileURLWithPath: file))
        let r = a.unlocked(["rekey"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("key epoch 0 → 1") && r.stderr.contains("2 items") && r.stderr.contains("1 session ended"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file), "the session file of the old key was wiped")
        #expect(get(a, "work/openai").out == "sk-rekey-123")
        #expect(get(a, "db", "password").out == "pw-0")
        let verify = a.unlocked(["verify"])
        #expect(verify.status == 0, "\(verify)")
        // Even a session file that survived (a copy put back) is refused:
        // its key is of the old epoch. One line, exit 77, says to unlock.
        FileManager.default.createFile(atPath: file, contents: copy, attributes: [.posixPermissions: 0o600])
        let old = a.run(["get", "work/openai"], env: ["COFFER_SESSION": token])
        SessionTests.expectSessionRefused(old, mentioning: "master key", token: token)
        #expect(old.stderr.contains("key epoch 1"), "\(old.stderr)")
        // status shows the epoch (no passphrase needed), JSON per its schema.
        let status = a.run(["status"])
        #expect(status.stdout.contains("key epoch:      1 (master key rotated on"), "\(status.stdout)")
        let statusJSON = a.run(["status", "--json"])
        SchemaValidation.expectValid(statusJSON.stdout, schema: "status.schema.json")
        #expect(statusJSON.stdout.contains("\"keyEpoch\":1") || statusJSON.stdout.contains("\"keyEpoch\" : 1"), "\(statusJSON.stdout)")
        // Unlocking again works.
        let fresh = try SessionTests.unlock(a)
        #expect(a.run(["get", "work/openai"], env: ["COFFER_SESSION": fresh]).out == "sk-rekey-123")
    }

    @Test func aWrongPassphraseChangesNothing() {
        let before = a.vaultBytes()
        let r = a.run(["rekey", "--passphrase-fd", "3"], fd3: "not the passphrase\n")
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.split(separator: "\n").first?.hasPrefix("coffer: error: wrong passphrase") == true, "\(r.stderr)")
        #expect(a.vaultBytes() == before)
    }

    @Test func aRekeyWithANewPassphrase() {
        let newFile = a.path("new-pass")
        FileManager.default.createFile(atPath: newFile, contents: Data("a new long passphrase for rekey\n".utf8), attributes: [.posixPermissions: 0o600])
        let r = a.unlocked(["rekey", "--new-passphrase-file", newFile])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("the passphrase changed"), "\(r.stderr)")
        #expect(get(a, "work/openai").status == 77)
        #expect(a.run(["get", "work/openai", "--passphrase-fd", "3"], fd3: "a new long passphrase for rekey\n").out == "sk-rekey-123")
        // A's sync rewrites its bundle under the new key.
        let sa = a.run(["sync", shared, "--passphrase-fd", "3"], fd3: "a new long passphrase for rekey\n")
        #expect(sa.status == 0 && sa.stderr.contains("wrote"), "\(sa)")
        // B adopts with the new passphrase (given on fd 3 for its sync).
        b.passphrase = "a new long passphrase for rekey"
        let s = b.run(["sync", shared, "--passphrase-fd", "3"], fd3: "correct horse battery staple\n")
        #expect(s.status == 77, "B's own passphrase unlocks B but does not open the new key: \(s)")
        #expect(s.stderr.contains("wrong passphrase for the new key"), "\(s.stderr)")
        // The vault is still on its old key, untouched.
        #expect(b.run(["get", "work/openai", "--passphrase-fd", "3"], fd3: "correct horse battery staple\n").out == "sk-rekey-123")
        let adopt = b.run(
            ["sync", shared, "--passphrase-fd", "3"], fd3: "correct horse battery staple\n", env: ["COFFER_PASSPHRASE": "a new long passphrase for rekey"])
        #expect(adopt.status == 0, "\(adopt)")
        #expect(adopt.stderr.contains("adopted the new master key"), "\(adopt.stderr)")
        #expect(get(b, "work/openai").out == "sk-rekey-123")
    }

    /// Rekey on A; concurrent edits on B and C before they see it; sync all
    /// three both ways: every edit everywhere, an old-epoch bundle refused
    /// (exit 65, one line naming both epochs), `verify` clean everywhere,
    /// and a clone of an epoch-1 bundle works with the passphrase.
    @Test func threeReplicasConverge() throws {
        let oldBundle = b.path("b-old.cb")
        #expect(b.unlocked(["export", "--out", oldBundle]).status == 0)
        #expect(a.unlocked(["rekey"]).status == 0)
        #expect(b.unlocked(["add", "from/b", "--type", "api-key"], stdin: "sk-b\n").status == 0)
        #expect(c.unlocked(["edit", "db", "--field", "username=from-c"]).status == 0)
        #expect(c.unlocked(["sync", shared]).status == 0) // C's bundle is still of epoch 0

        let sa = a.unlocked(["sync", shared])
        #expect(sa.status == 0, "\(sa)")
        #expect(sa.stderr.contains("written under an older master key"), "\(sa.stderr)")
        let before = a.vaultBytes()
        let refused = a.unlocked(["import", oldBundle])
        #expect(refused.status == 65, "\(refused)")
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.first?.contains("key epoch 0") == true && lines.first?.contains("key epoch 1") == true, "\(refused.stderr)")
        #expect(lines.count == 2 && lines[1].hasPrefix("coffer: hint:"), "\(refused.stderr)")
        #expect(a.vaultBytes() == before)

        for _ in 0..<2 {
            for home in [b, c, a] {
                let r = home.unlocked(["sync", shared])
                #expect(r.status == 0, "\(r)")
            }
        }
        for home in [a, b, c] {
            #expect(get(home, "from/b").out == "sk-b")
            #expect(get(home, "db", "username").out == "from-c")
            #expect(get(home, "work/openai").out == "sk-rekey-123")
            let v = home.unlocked(["verify"])
            #expect(v.status == 0, "\(v)")
        }
        let full = a.path("full-1.cb")
        #expect(a.unlocked(["export", "--out", full]).status == 0)
        let d = TestHome()
        let clone = d.unlocked(["clone", full])
        #expect(clone.status == 0, "\(clone)")
        #expect(get(d, "from/b").out == "sk-b")
        // inspect shows the key epoch of a format-4 bundle (format 3's
        // body, its key wrapped with coffer-wrap-v3).
        let inspect = a.run(["inspect", full])
        #expect(inspect.status == 0 && inspect.stdout.contains("format:     4") && inspect.stdout.contains("key epoch:  1"), "\(inspect)")
        let json = a.run(["inspect", full, "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "inspect.schema.json")
        #expect(json.stdout.contains("\"keyEpoch\""), "\(json.stdout)")
    }

    /// `sync --git`: a machine adopts the new key in its first round and
    /// pushes its bundle written under it.
    @Test(.enabled(if: SyncGitTests.hasGit, "git is not installed")) func gitSyncAdoptsTheNewKey() throws {
        typealias G = SyncGitTests.Git
        let bare = keep.path("remote.git")
        G(home: keep, dir: keep.root.path).run(["init", "-q", "--bare", bare])
        let ga = G(home: a, dir: a.path("work"))
        let gb = G(home: b, dir: b.path("work"))
        G(home: a, dir: a.root.path).run(["clone", "-q", bare, ga.dir])
        G(home: b, dir: b.root.path).run(["clone", "-q", bare, gb.dir])
        for (g, who) in [(ga, "a"), (gb, "b")] {
            g.run(["config", "user.name", "Machine \(who)"])
            g.run(["config", "user.email", "\(who)@example.invalid"])
        }
        #expect(a.unlocked(["sync", ga.dir, "--git"]).status == 0)
        #expect(b.unlocked(["sync", gb.dir, "--git"]).status == 0)
        #expect(a.unlocked(["rekey"]).status == 0)
        #expect(b.unlocked(["add", "git/b", "--type", "api-key"], stdin: "sk-git-b\n").status == 0)
        let ra = a.unlocked(["sync", ga.dir, "--git"])
        #expect(ra.status == 0, "\(ra)")
        let rb = b.unlocked(["sync", gb.dir, "--git"])
        #expect(rb.status == 0, "\(rb)")
        #expect(rb.stderr.contains("adopted the new master key"), "\(rb.stderr)")
        let ra2 = a.unlocked(["sync", ga.dir, "--git"])
        #expect(ra2.status == 0, "\(ra2)")
        #expect(get(a, "git/b").out == "sk-git-b")
        #expect(b.unlocked(["verify"]).status == 0)
    }

    @Test func helpExplainsRekey() {
        let r = a.run(["help", "rekey"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("Rotate the vault's master key") && r.stdout.contains("--change-passphrase"), "\(r.stdout)")
    }
}
