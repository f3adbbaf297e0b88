import CofferTestSupport
import Foundation
import Testing

/// Passphrase changes travel between replicas through bundles, ordered by
/// version vector (docs/sync.md §Passphrase changes): three replicas
/// sharing one sync folder, as three machines would.
@Suite("passphrase changes travel between replicas", .serialized)
struct PassphraseTravelTests {
    typealias F = SyncFixture
    let shared: String
    let a = TestHome(), b = TestHome(), c = TestHome()
    let keep = TestHome() // owns the shared folder

    init() throws {
        shared = keep.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        a.initVault()
        let add = a.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-travel-123\n")
        #expect(add.status == 0, "\(add)")
        #expect(a.unlocked(["sync", shared]).status == 0)
        let first = try bundles().first!
        for home in [b, c] {
            let r = home.unlocked(["clone", first])
            #expect(r.status == 0, "\(r)")
            #expect(home.unlocked(["sync", shared]).status == 0)
        }
    }

    func bundles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: shared).filter { $0.hasSuffix(".coffer-bundle") }.sorted().map { shared + "/" + $0 }
    }

    /// This replica's id, from the name of the bundle it writes.
    func replicaID(_ home: TestHome) throws -> String {
        let before = Set(try bundles())
        _ = home.unlocked(["sync", shared])
        let s = home.unlocked(["status", "--json"])
        let o = try JSONSerialization.jsonObject(with: Data(s.stdout.utf8)) as? [String: Any]
        if let id = (o?["replica"] as? String) ?? (o?["replicaId"] as? String) { return id }
        Issue.record("status --json has no replica id: \(s); bundles \(before)")
        return ""
    }

    func file(_ home: TestHome, _ name: String, _ text: String) -> String {
        let p = home.path(name)
        _ = FileManager.default.createFile(atPath: p, contents: Data((text + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return p
    }

    func passwd(_ home: TestHome, to new: String) {
        let old = file(home, "old-pass", home.passphrase)
        let newFile = file(home, "new-pass", new)
        let r = home.run(["passwd", "--passphrase-file", old, "--new-passphrase-file", newFile])
        #expect(r.status == 0, "\(r)")
        home.passphrase = new
    }

    /// `get` with a given passphrase (on fd 3).
    func get(_ home: TestHome, with passphrase: String) -> CLIResult {
        home.run(["get", "work/openai", "--passphrase-fd", "3"], fd3: passphrase + "\n")
    }

    @Test("A changes its passphrase; B and C adopt it on their next sync and say so; clones of any bundle open with it")
    func travels() throws {
        let old = a.passphrase
        let new = "a new passphrase for every replica"
        let idA = try replicaID(a)
        passwd(a, to: new)
        let sa = a.unlocked(["sync", shared])
        #expect(sa.status == 0, "\(sa)")
        // The bundle A now writes is format 2 and shows the change.
        // A passphrase change is written into a new snapshot.
        let ownA = try #require(F.newest(in: shared, replica: idA))
        #expect(F.snapshots(in: shared).contains(ownA))
        let inspected = a.run(["inspect", ownA, "--json"])
        #expect(inspected.status == 0, "\(inspected)")
        SchemaValidation.expectValid(inspected.stdout, schema: "inspect.schema.json")
        let info = try JSONSerialization.jsonObject(with: Data(inspected.stdout.utf8)) as? [String: Any]
        // Format 4: the key is wrapped with coffer-wrap-v3 (vault format 7).
        #expect(info?["formatVersion"] as? Int == 4)
        let change = info?["passphraseChange"] as? [String: Any]
        #expect(change?["changedBy"] as? String == idA)
        #expect(change?["vector"] as? [String: Int] == [idA: 1])
        #expect(a.run(["inspect", ownA]).stdout.contains("passphrase: changed on \(idA.prefix(8)) at "))
        // A dry run says what would happen and changes nothing.
        let before = b.vaultBytes()
        let dry = b.run(["sync", shared, "--dry-run", "--passphrase-fd", "3"], fd3: old + "\n")
        #expect(dry.status == 0, "\(dry)")
        #expect(dry.stdout.contains("would adopt the passphrase changed on \(idA.prefix(8)) at "), "\(dry)")
        #expect(b.vaultBytes() == before)
        let dryImport = b.run(["import", "--dry-run", ownA, "--passphrase-fd", "3"], fd3: old + "\n")
        #expect(dryImport.status == 0 && dryImport.stdout.contains("would adopt the passphrase changed on"), "\(dryImport)")
        #expect(b.vaultBytes() == before)
        for home in [b, c] {
            // The replica still opens with the old passphrase: that is how
            // it reads the bundle that carries the change.
            let r = home.run(["sync", shared, "--passphrase-fd", "3"], fd3: old + "\n")
            #expect(r.status == 0, "\(r)")
            #expect(r.stderr.contains("coffer: passphrase changed on \(idA.prefix(8)) at "), "\(r)")
            #expect(r.stderr.contains("; this vault now opens with the new one"), "\(r)")
            let withOld = get(home, with: old)
            #expect(withOld.status == 77, "\(withOld)")
            let withNew = get(home, with: new)
            #expect(withNew.status == 0 && withNew.out == "sk-travel-123", "\(withNew)")
            home.passphrase = new
            // A second sync has nothing to adopt and says nothing of it.
            let again = home.unlocked(["sync", shared])
            #expect(again.status == 0 && !again.stderr.contains("passphrase changed"), "\(again)")
        }
        // Every bundle in the folder now carries the new wrapping: a clone
        // of any of them opens with the new passphrase only.
        for bundle in try bundles() {
            let fresh = TestHome()
            fresh.passphrase = old
            let refused = fresh.unlocked(["clone", bundle])
            #expect(refused.status == 77, "\(bundle): \(refused)")
            fresh.passphrase = new
            let cloned = fresh.unlocked(["clone", bundle])
            #expect(cloned.status == 0, "\(bundle): \(cloned)")
            #expect(get(fresh, with: new).out == "sk-travel-123")
        }
    }

    @Test("a session opened before the change keeps working after the replica adopts it")
    func sessionsSurvive() throws {
        let r = b.unlocked(["unlock", "--shell", "sh"])
        #expect(r.status == 0, "\(r)")
        let prefix = "export COFFER_SESSION='"
        #expect(r.out.hasPrefix(prefix))
        let token = String(r.out.dropFirst(prefix.count).dropLast(2))
        passwd(a, to: "the session test passphrase")
        #expect(a.unlocked(["sync", shared]).status == 0)
        let s = b.run(["sync", shared], env: ["COFFER_SESSION": token])
        #expect(s.status == 0 && s.stderr.contains("this vault now opens with the new one"), "\(s)")
        let g = b.run(["get", "work/openai"], env: ["COFFER_SESSION": token])
        #expect(g.status == 0 && g.out == "sk-travel-123", "\(g)")
    }

    @Test("concurrent changes on A and B converge on one passphrase, the same on every replica, and are reported")
    func concurrentChangesConverge() throws {
        let idA = try replicaID(a)
        let idB = try replicaID(b)
        let pa = "passphrase chosen on A"
        let pb = "passphrase chosen on B"
        passwd(a, to: pa)
        passwd(b, to: pb)
        // Neither has seen the other's change: both sync, then everyone
        // syncs twice so every bundle has reached every replica.
        var said: [String] = []
        for home in [a, b, c, a, b, c, a, b, c] {
            let r = home.unlocked(["sync", shared])
            #expect(r.status == 0, "\(r)")
            said.append(r.stderr)
            // Track which passphrase now opens this replica.
            if get(home, with: home.passphrase).status != 0 {
                for p in [pa, pb] where get(home, with: p).status == 0 { home.passphrase = p }
            }
        }
        // The rule: of two concurrent changes the larger dot wins, the
        // replica id compared bytewise (lower-case hex sorts the same way).
        let winner = idA > idB ? pa : pb
        for home in [a, b, c] {
            #expect(get(home, with: winner).out == "sk-travel-123")
            let loser = winner == pa ? pb : pa
            #expect(get(home, with: loser).status == 77)
        }
        #expect(said.contains { $0.contains("concurrently with the change made on") }, "\(said)")
        // A clone of any snapshot opens with the winner.
        for bundle in F.snapshots(in: shared) {
            let fresh = TestHome()
            fresh.passphrase = winner
            let r = fresh.unlocked(["clone", bundle])
            #expect(r.status == 0, "\(bundle): \(r)")
        }
    }

    @Test("the wrapping's version is covered by the vault MAC: deleting or replaying it without the key is detected")
    func wrappingVersionIsAuthenticated() throws {
        passwd(a, to: "a passphrase that was changed once")
        #expect(a.unlocked(["verify"]).status == 0)
        let before = a.vaultBytes()
        // Forget the change (so this replica would take an older wrapping
        // from a bundle), as an attacker with only the file would.
        VaultTamperingTests.sql(a.vaultPath, "DELETE FROM keyWrapping;")
        let v = a.unlocked(["verify"])
        #expect(v.status == 65, "\(v)")
        let s = a.unlocked(["export", "--out", a.path("tampered.cb")])
        #expect(s.status == 65 && s.stderr.contains("vault file was modified outside coffer"), "\(s)")
        try before.write(to: URL(fileURLWithPath: a.vaultPath))
        #expect(a.unlocked(["verify"]).status == 0)
    }
}
