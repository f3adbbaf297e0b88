import CofferTestSupport
import Foundation
import Testing

/// Two machines syncing through a real git repository: each replica writes
/// only its own bundle file, so pulls never conflict.
@Suite("coffer sync through git, black-box")
struct SyncGitTests {
    typealias F = SyncFixture

    static let hasGit =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/git")
        || (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/git")
        }

    struct Git {
        let home: TestHome
        let dir: String

        @discardableResult
        func run(_ args: [String], sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
            var env = home.environment
            env["GIT_CONFIG_NOSYSTEM"] = "1"
            env["GIT_TERMINAL_PROMPT"] = "0"
            let r = Spawn.run("git", args, stdin: nil, fd3: nil, environment: env, workDir: dir)
            #expect(r.status == 0, "git \(args.joined(separator: " ")): \(r)", sourceLocation: sourceLocation)
            return r
        }

        /// Stages everything and commits if anything changed.
        func commit(_ message: String) {
            run(["add", "-A"])
            let status = run(["status", "--porcelain"])
            if !status.stdout.isEmpty { run(["commit", "-q", "-m", message]) }
        }
    }

    @Test(.enabled(if: hasGit, "git is not installed")) func twoClonesNeverConflict() throws {
        let a = TestHome()
        let b = TestHome()
        let bare = a.path("remote.git")
        Git(home: a, dir: a.root.path).run(["init", "-q", "--bare", bare])
        let ga = Git(home: a, dir: a.path("work"))
        let gb = Git(home: b, dir: b.path("work"))
        Git(home: a, dir: a.root.path).run(["clone", "-q", bare, a.path("work")])
        Git(home: b, dir: b.root.path).run(["clone", "-q", bare, b.path("work")])
        for (g, who) in [(ga, "a"), (gb, "b")] {
            g.run(["config", "user.name", "Machine \(who)"])
            g.run(["config", "user.email", "\(who)@example.invalid"])
            g.run(["config", "pull.rebase", "false"])
        }

        // Machine a: vault, first bundle, push.
        a.initVault()
        F.expectOK(a.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-0\n"))
        F.expectOK(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n"))
        F.expectOK(a.unlocked(["sync", ga.dir]))
        ga.commit("a: sync")
        ga.run(["push", "-q", "origin", "HEAD"])
        let branch = ga.run(["rev-parse", "--abbrev-ref", "HEAD"]).out

        // Machine b: pull, clone the vault from the bundle, sync, push.
        gb.run(["pull", "-q", "--no-rebase", "origin", branch])
        F.expectOK(b.unlocked(["clone", F.bundles(in: gb.dir)[0]]))
        F.expectOK(b.unlocked(["sync", gb.dir]))
        gb.commit("b: sync")
        gb.run(["push", "-q", "origin", "HEAD:\(branch)"])

        // Three rounds of concurrent edits on both machines.
        for round in 1...3 {
            F.expectOK(a.unlocked(["edit", "db", "--field", "username=a\(round)"]))
            F.expectOK(a.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-a\(round)\n"))
            F.expectOK(b.unlocked(["edit", "db", "--secret", "password"], stdin: "p-b\(round)\n"))
            F.expectOK(b.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-b\(round)\n"))
            F.expectOK(b.unlocked(["add", "b/item\(round)", "--type", "custom", "--field", "text=\(round)"]))

            // Both sync and commit before either pulls.
            F.expectOK(a.unlocked(["sync", ga.dir]))
            ga.commit("a: round \(round)")
            F.expectOK(b.unlocked(["sync", gb.dir]))
            gb.commit("b: round \(round)")

            // a pushes first; b must pull (a real merge commit) without conflict.
            ga.run(["pull", "-q", "--no-rebase", "origin", branch])
            ga.run(["push", "-q", "origin", "HEAD:\(branch)"])
            let pull = gb.run(["pull", "-q", "--no-rebase", "origin", branch])
            #expect(!pull.stdout.contains("CONFLICT") && !pull.stderr.contains("CONFLICT"))
            F.expectOK(b.unlocked(["sync", gb.dir]))
            gb.commit("b: merged round \(round)")
            gb.run(["push", "-q", "origin", "HEAD:\(branch)"])
            ga.run(["pull", "-q", "--no-rebase", "origin", branch])
            F.expectOK(a.unlocked(["sync", ga.dir]))
            ga.commit("a: merged round \(round)")
            ga.run(["push", "-q", "origin", "HEAD:\(branch)"])
            gb.run(["pull", "-q", "--no-rebase", "origin", branch])
            F.expectOK(b.unlocked(["sync", gb.dir]))

            #expect(a.unlocked(["get", "db", "--field", "username"]).out == "a\(round)")
            #expect(b.unlocked(["get", "db", "--field", "username"]).out == "a\(round)")
            #expect(a.unlocked(["get", "db", "--field", "password"]).out == "p-b\(round)")
            #expect(a.unlocked(["get", "work/openai"]).out == b.unlocked(["get", "work/openai"]).out)
            #expect(a.unlocked(["ls"]).stdout == b.unlocked(["ls"]).stdout)

            // Settle the key conflict on a; it reaches b on the next round.
            let c = a.unlocked(["conflicts", "--json"])
            #expect(c.stdout.contains("\"field\" : \"key\""))
            F.expectOK(a.unlocked(["resolve", "work/openai", "--field", "key", "--keep", "1"]))
        }
        F.expectOK(a.unlocked(["sync", ga.dir]))
        ga.commit("a: final")
        ga.run(["pull", "-q", "--no-rebase", "origin", branch])
        ga.run(["push", "-q", "origin", "HEAD:\(branch)"])
        gb.run(["pull", "-q", "--no-rebase", "origin", branch])
        F.expectOK(b.unlocked(["sync", gb.dir]))
        #expect(F.dump(a) == F.dump(b))
        #expect(b.unlocked(["conflicts", "--json"]).stdout == a.unlocked(["conflicts", "--json"]).stdout)
        // The repository holds the two replicas' snapshots and segments
        // and nothing else.
        let files = try FileManager.default.contentsOfDirectory(atPath: ga.dir).filter { $0 != ".git" }
        #expect(files.allSatisfy { $0.hasSuffix(".coffer-bundle") } && F.replicas(in: ga.dir).count == 2, "\(files)")
        #expect(F.snapshots(in: ga.dir).count == 2, "\(files)")
    }

    /// Issue 30: `sync --git` after one edit commits only this replica's
    /// new segment (and the removal of the segments it merged), so the
    /// repository grows with the change, not with the vault.
    @Test(.enabled(if: hasGit, "git is not installed")) func eachSyncCommitsOnlyTheNewSegment() throws {
        let a = TestHome()
        let bare = a.path("remote.git")
        Git(home: a, dir: a.root.path).run(["init", "-q", "--bare", bare])
        Git(home: a, dir: a.root.path).run(["clone", "-q", bare, a.path("work")])
        let ga = Git(home: a, dir: a.path("work"))
        a.initVault()
        for i in 0..<40 {
            F.expectOK(a.unlocked(["add", "k/\(i)", "--type", "custom", "--field", "text=\(String(repeating: "v\(i)", count: 40))"]))
        }
        F.expectOK(a.unlocked(["sync", ga.dir, "--git"]))
        let snapshot = try #require(F.snapshots(in: ga.dir).first)
        let snapshotSize = try #require(try FileManager.default.attributesOfItem(atPath: snapshot)[.size] as? Int)
        for step in 1...5 {
            F.expectOK(a.unlocked(["edit", "k/\(step)", "--field", "text=edited \(step)"]))
            F.expectOK(a.unlocked(["sync", ga.dir, "--git"]))
            let changed = ga.run(["show", "--name-status", "--format=", "HEAD"]).stdout.split(separator: "\n")
            let added = changed.filter { $0.hasPrefix("A\t") }
            #expect(added.count == 1, "step \(step): \(changed)")
            // Step 4 merges the three segments of span 1 into one.
            #expect(changed.filter { $0.hasPrefix("D\t") }.count == (step == 4 ? 3 : 0), "step \(step): \(changed)")
            #expect(!changed.contains { $0.hasPrefix("M\t") }, "a file was rewritten: \(changed)")
            let name = String(added[0].dropFirst(2))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: ga.dir + "/" + name)[.size] as? Int)
            #expect(size * 2 < snapshotSize, "step \(step): \(name) is \(size) B, the snapshot \(snapshotSize) B")
        }
        #expect(ga.run(["rev-list", "--count", "HEAD"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "6")
        #expect(ga.run(["status", "--porcelain"]).stdout.isEmpty)
    }
}
