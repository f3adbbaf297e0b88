import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Helpers for tests with two machines (two sandbox homes) of one vault.
enum SyncFixture {
    /// Creates a vault on `a`, writes its bundle to `dir`, clones it on `b`
    /// and lets `b` write its bundle too.
    static func twoReplicas(dir: String) -> (TestHome, TestHome) {
        let a = TestHome()
        let b = TestHome()
        a.initVault()
        try! FileManager.default.createDirectory(atPath: dir.isEmpty ? a.path("sync") : dir, withIntermediateDirectories: true)
        let d = dir.isEmpty ? a.path("sync") : dir
        expectOK(a.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-0\n"))
        expectOK(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n"))
        expectOK(a.unlocked(["sync", d]))
        let bundle = bundles(in: d)[0]
        expectOK(b.unlocked(["clone", bundle]))
        expectOK(b.unlocked(["sync", d]))
        return (a, b)
    }

    static func bundles(in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".coffer-bundle") }.sorted()
            .map { dir + "/" + $0 }
    }

    /// The replica ids (hex) that have snapshots or segments in `dir`.
    static func replicas(in dir: String) -> Set<String> {
        Set(bundles(in: dir).map { String(($0 as NSString).lastPathComponent.prefix(32)) })
    }

    /// The snapshots in `dir` (publication numbers `0-N`).
    static func snapshots(in dir: String) -> [String] {
        bundles(in: dir).filter { ($0 as NSString).lastPathComponent.dropFirst(32).hasPrefix(".0000000000-") }
    }

    /// The newest file in `dir` of the replica whose id starts with
    /// `replica`: the one with the highest last publication number
    /// (`<id>.<first>-<last>.coffer-bundle`).
    static func newest(in dir: String, replica: String) -> String? {
        bundles(in: dir).filter { ($0 as NSString).lastPathComponent.hasPrefix(replica) }.max {
            ($0 as NSString).lastPathComponent.dropFirst(44).prefix(10) < ($1 as NSString).lastPathComponent.dropFirst(44).prefix(10)
        }
    }

    /// Name → field values, for comparing replicas.
    static func dump(_ h: TestHome) -> String {
        let ls = h.unlocked(["ls", "--json"])
        expectOK(ls)
        var out = ls.stdout
        for name in ["work/openai", "db"] {
            let r = h.unlocked(["get", name, "--json"])
            if r.status == 0 {
                // Drop the volatile parts: nothing here differs between replicas.
                out += r.stdout
            }
        }
        return out
    }

    static func expectOK(_ r: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 0, "\(r)", sourceLocation: sourceLocation)
    }

    /// Modification times and sizes of the folder's files.
    static func fingerprint(_ dir: String) -> [String: String] {
        var out: [String: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            var st = stat()
            stat(dir + "/" + name, &st)
            out[name] = "\(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_ino)"
        }
        return out
    }

}

@Suite("coffer sync, black-box")
struct SyncCLITests {
    typealias F = SyncFixture

    @Test func twoHomesThroughAPlainFolder() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        // Concurrent edits: different fields of db, the same field of work/openai.
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=alice"]))
        F.expectOK(b.unlocked(["edit", "db", "--secret", "password"], stdin: "p-bob\n"))
        F.expectOK(a.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-A\n"))
        F.expectOK(b.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-B\n"))
        F.expectOK(a.unlocked(["sync", dir]))
        let bsync = b.unlocked(["sync", dir])
        F.expectOK(bsync)
        #expect(bsync.stderr.contains("new conflict: work/openai field key"))
        F.expectOK(a.unlocked(["sync", dir]))

        for h in [a, b] {
            #expect(h.unlocked(["get", "db", "--field", "username"]).out == "alice")
            #expect(h.unlocked(["get", "db", "--field", "password"]).out == "p-bob")
        }
        #expect(a.unlocked(["get", "work/openai"]).out == b.unlocked(["get", "work/openai"]).out)
        #expect(F.dump(a) == F.dump(b))

        // The conflict, secrets hidden unless asked.
        let c = a.unlocked(["conflicts", "--json"])
        F.expectOK(c)
        SchemaValidation.expectValid(c.stdout, schema: "conflicts.schema.json")
        #expect(!c.stdout.contains("sk-A") && !c.stdout.contains("sk-B"))
        let shown = a.unlocked(["conflicts", "--json", "--show-secrets"])
        SchemaValidation.expectValid(shown.stdout, schema: "conflicts.schema.json")
        #expect(shown.stdout.contains("sk-A") && shown.stdout.contains("sk-B"))
        let text = b.unlocked(["conflicts"])
        #expect(text.stdout.contains("work/openai  field key: 2 concurrent values"))

        // Resolve on b with a new value from stdin; converge.
        F.expectOK(b.unlocked(["resolve", "work/openai", "--field", "key", "--value-stdin"], stdin: "sk-final\n"))
        F.expectOK(b.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        for h in [a, b] {
            #expect(h.unlocked(["get", "work/openai"]).out == "sk-final")
            let none = h.unlocked(["conflicts", "--json"])
            SchemaValidation.expectValid(none.stdout, schema: "conflicts.schema.json")
            #expect(none.stdout.contains("\"conflicts\" : [\n\n  ]") || none.stdout.contains("\"conflicts\" : []"))
        }
        #expect(F.dump(a) == F.dump(b))

        // Running sync again changes nothing: not the vault, not the folder.
        let vaultBefore = a.vaultBytes()
        let dirBefore = F.fingerprint(dir)
        let again = a.run(["sync", dir]) // no passphrase needed when there is nothing to do
        F.expectOK(again)
        #expect(again.stderr.contains("nothing new"))
        #expect(a.vaultBytes() == vaultBefore)
        #expect(F.fingerprint(dir) == dirBefore)

        // replicas --json
        let reps = a.unlocked(["replicas", "--json"])
        F.expectOK(reps)
        SchemaValidation.expectValid(reps.stdout, schema: "replicas.schema.json")
        let parsed = try JSONSerialization.jsonObject(with: Data(reps.stdout.utf8)) as! [String: Any]
        let list = parsed["replicas"] as! [[String: Any]]
        #expect(list.count == 2)
        #expect(list.filter { $0["local"] as? Bool == true }.count == 1)
    }

    @Test func dryRunShowsChangesAndChangesNothing() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=alice"]))
        F.expectOK(a.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-A\n"))
        F.expectOK(b.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-B\n"))
        F.expectOK(a.unlocked(["add", "new/one", "--type", "custom", "--field", "text=hi"]))
        F.expectOK(a.unlocked(["sync", dir]))
        let before = b.vaultBytes()
        let dirBefore = F.fingerprint(dir)
        let dry = b.unlocked(["sync", dir, "--dry-run"])
        F.expectOK(dry)
        #expect(dry.stdout.contains("~ db"))
        #expect(dry.stdout.contains("username: changed to 'alice'"))
        #expect(dry.stdout.contains("key: CONFLICT, 2 concurrent values"))
        #expect(dry.stdout.contains("+ new/one  (new item)"))
        #expect(!dry.stdout.contains("sk-A") && !dry.stdout.contains("sk-B"))
        #expect(b.vaultBytes() == before)
        #expect(F.fingerprint(dir) == dirBefore)

        // import --dry-run gives the same preview for one file.
        let bID = b.unlocked(["replicas", "--json"]).stdout.localReplica ?? "?"
        let aID = try #require(F.replicas(in: dir).first { $0 != bID })
        let aBundle = try #require(F.newest(in: dir, replica: aID))
        let imp = b.unlocked(["import", "--dry-run", aBundle])
        F.expectOK(imp)
        #expect(imp.stdout.contains("username: changed to 'alice'"))
        #expect(b.vaultBytes() == before)
    }

    @Test func oneBadBundleIsReportedAndTheOthersMerge() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=alice"]))
        F.expectOK(a.unlocked(["sync", dir]))
        // A third replica's bundle arrives damaged (one flipped bit) and as a
        // truncated copy; a README and a bundle of another vault sit in the
        // folder too.
        let c = TestHome()
        let cDir = c.path("own")
        try FileManager.default.createDirectory(atPath: cDir, withIntermediateDirectories: true)
        let bID = b.unlocked(["replicas", "--json"]).stdout.localReplica ?? "?"
        F.expectOK(c.unlocked(["clone", F.bundles(in: dir).first { !$0.contains(bID) }!]))
        F.expectOK(c.unlocked(["edit", "db", "--field", "url=https://c.example"]))
        F.expectOK(c.unlocked(["sync", cDir]))
        let good = try Data(contentsOf: URL(fileURLWithPath: F.bundles(in: cDir)[0]))
        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        try flipped.write(to: URL(fileURLWithPath: dir + "/flipped.coffer-bundle"))
        try good.prefix(good.count - 100).write(to: URL(fileURLWithPath: dir + "/cut.coffer-bundle"))
        try Data("# notes\n".utf8).write(to: URL(fileURLWithPath: dir + "/README.md"))
        let other = TestHome()
        other.initVault()
        F.expectOK(other.unlocked(["add", "x", "--type", "custom", "--field", "text=1"]))
        F.expectOK(other.unlocked(["export", "--out", dir + "/foreign.coffer-bundle"]))

        let r = b.unlocked(["sync", dir])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("flipped.coffer-bundle"))
        #expect(r.stderr.contains("cut.coffer-bundle"))
        #expect(r.stderr.contains("foreign.coffer-bundle"))
        #expect(!r.stderr.contains("README"))
        // The good bundle merged, nothing of the damaged ones did, and b's
        // own bundle was written.
        #expect(b.unlocked(["get", "db", "--field", "username"]).out == "alice")
        #expect(b.unlocked(["get", "db", "--field", "url"]).status == 66)
        #expect(r.stderr.contains("wrote "))
        // The files of others are untouched.
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/flipped.coffer-bundle")) == flipped)
    }

    @Test func conflictCopiesOfSyncToolsAreMerged() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        // b writes a bundle, then Syncthing keeps it as a conflict copy while
        // an older version of b's file wins the main name.
        let bFile = F.bundles(in: dir).first { $0.contains(b.unlocked(["replicas", "--json"]).stdout.localReplica ?? "?") }!
        let older = try Data(contentsOf: URL(fileURLWithPath: bFile))
        F.expectOK(b.unlocked(["edit", "db", "--field", "username=from-b"]))
        F.expectOK(b.unlocked(["sync", dir]))
        let stem = (bFile as NSString).lastPathComponent.replacingOccurrences(of: ".coffer-bundle", with: "")
        try FileManager.default.moveItem(atPath: bFile, toPath: dir + "/\(stem).sync-conflict-20240101-123456-ABCDEFG.coffer-bundle")
        try older.write(to: URL(fileURLWithPath: bFile))
        // Dropbox style too.
        F.expectOK(b.unlocked(["edit", "db", "--field", "url=https://b.example"]))
        F.expectOK(b.unlocked(["export", "--out", dir + "/\(stem) (conflicted copy 2024-01-01).coffer-bundle"]))
        let r = a.unlocked(["sync", dir])
        F.expectOK(r)
        #expect(a.unlocked(["get", "db", "--field", "username"]).out == "from-b")
        #expect(a.unlocked(["get", "db", "--field", "url"]).out == "https://b.example")
    }

    @Test func copiedVaultTakesANewReplicaIDAndSaysSoOnce() throws {
        let a = TestHome()
        a.initVault()
        F.expectOK(a.unlocked(["add", "n", "--type", "custom", "--field", "text=1"]))
        let copy = a.path("copy.coffer")
        try FileManager.default.copyItem(atPath: a.vaultPath, toPath: copy)
        let first = a.unlocked(["edit", "n", "--field", "text=2", "--vault", copy])
        F.expectOK(first)
        #expect(first.stderr.contains("was copied or replaced"))
        let second = a.unlocked(["edit", "n", "--field", "text=3", "--vault", copy])
        F.expectOK(second)
        #expect(!second.stderr.contains("copied"))
        let orig = a.unlocked(["edit", "n", "--field", "text=4"])
        #expect(!orig.stderr.contains("copied"))
        let ids = [copy, a.vaultPath].map { a.unlocked(["replicas", "--json", "--vault", $0]).stdout.localReplica }
        #expect(ids[0] != nil && ids[0] != ids[1])
    }

    @Test func resolveRejectsBadInputAndLeavesTheVaultAlone() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(a.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-A\n"))
        F.expectOK(b.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-B\n"))
        F.expectOK(b.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        let before = a.vaultBytes()
        for args in [
            ["resolve", "work/openai", "--keep", "3"],
            ["resolve", "work/openai", "--keep", "1", "--value", "x"],
            ["resolve", "work/openai"],
            ["resolve", "work/openai", "--field", "nope", "--keep", "1"],
            ["resolve", "db", "--keep", "1"],
        ] {
            let r = a.unlocked(args)
            #expect(r.status == 64, "\(args): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: "), "\(r)")
        }
        #expect(a.unlocked(["resolve", "missing", "--keep", "1"]).status == 66)
        #expect(a.vaultBytes() == before)
        // --keep on the side not shown, then it is the value everywhere.
        let c = a.unlocked(["conflicts", "--json", "--show-secrets"]).stdout
        let obj = try JSONSerialization.jsonObject(with: Data(c.utf8)) as! [String: Any]
        let sides = ((obj["conflicts"] as! [[String: Any]])[0]["sides"] as! [[String: Any]])
        let hidden = sides.first { $0["shown"] as? Bool == false }!
        F.expectOK(a.unlocked(["resolve", "work/openai", "--keep", "\(hidden["number"] as! Int)"]))
        #expect(a.unlocked(["get", "work/openai"]).out == hidden["value"] as? String)
    }

    @Test func syncErrorsAreClear() {
        let a = TestHome()
        a.initVault()
        _ = FileManager.default.createFile(atPath: a.path("file"), contents: Data())
        // A missing folder is created (SecondMachineTests); one that
        // cannot be is exit 73.
        let missing = a.run(["sync", a.path("file/nope")])
        #expect(missing.status == 73, "\(missing)")
        #expect(missing.stderr.contains("cannot create the sync folder"))
        let notDir = a.run(["sync", a.path("file")])
        #expect(notDir.status == 64, "\(notDir)")
    }
}

extension String {
    /// The local replica id in `coffer replicas --json` output.
    var localReplica: String? {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(utf8)) as? [String: Any],
            let list = obj["replicas"] as? [[String: Any]]
        else { return nil }
        return list.first { $0["local"] as? Bool == true }?["id"] as? String
    }
}
