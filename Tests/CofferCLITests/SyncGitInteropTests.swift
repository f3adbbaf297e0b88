import CofferTestSupport
import Foundation
import Testing

/// `coffer sync DIR --git` against a real git (a bare repository as the
/// remote): an empty remote, nothing to commit, three replicas running at
/// the same moment (pushes rejected and retried), never a git conflict.
@Suite(
    "coffer sync --git, real git",
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1", "set COFFER_INTEROP=1 (make test-interop)"))
struct SyncGitInteropTests {
    typealias F = SyncFixture

    static func git(_ home: TestHome, _ dir: String, _ args: [String], sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
        var env = home.environment
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_TERMINAL_PROMPT"] = "0"
        let r = Spawn.run("git", args, stdin: nil, fd3: nil, environment: env, workDir: dir)
        #expect(r.status == 0, "git \(args.joined(separator: " ")): \(r)", sourceLocation: sourceLocation)
        return r
    }

    /// A home with a clone of `bare` at `work`.
    static func machine(cloning bare: String) -> (TestHome, String) {
        let h = TestHome()
        _ = git(h, h.root.path, ["clone", "-q", bare, h.path("work")])
        return (h, h.path("work"))
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [CLIResult] = []
        func append(_ r: CLIResult) {
            lock.lock()
            items.append(r)
            lock.unlock()
        }
        var all: [CLIResult] {
            lock.lock()
            defer { lock.unlock() }
            return items
        }
    }

    static func gitEnv(_ h: TestHome) -> [String: String] { ["GIT_CONFIG_NOSYSTEM": "1"] }

    @Test func emptyRemoteNothingToCommitAndAPullThatMerges() throws {
        let origin = TestHome()
        let bare = origin.path("remote.git")
        _ = Self.git(origin, origin.root.path, ["init", "-q", "--bare", bare])

        let (a, wa) = Self.machine(cloning: bare)
        a.initVault()
        F.expectOK(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n"))
        let first = a.unlocked(["sync", wa, "--git"], env: Self.gitEnv(a))
        F.expectOK(first)
        #expect(first.stderr.contains("committed") && first.stderr.contains("pushed to origin/"), "\(first)")
        // Nothing changed: nothing to commit, still exit 0.
        let again = a.unlocked(["sync", wa, "--git"], env: Self.gitEnv(a))
        F.expectOK(again)
        #expect(again.stderr.contains("nothing to commit"), "\(again)")

        let (b, wb) = Self.machine(cloning: bare)
        F.expectOK(b.unlocked(["clone", wb]))
        F.expectOK(b.unlocked(["edit", "db", "--field", "username=from-b"]))
        F.expectOK(b.unlocked(["sync", wb, "--git"], env: Self.gitEnv(b)))

        // a has nothing to commit, yet pulls and merges b's edit (the old
        // one-liner stopped at `git commit`).
        let pull = a.unlocked(["sync", wa, "--git"], env: Self.gitEnv(a))
        F.expectOK(pull)
        #expect(a.unlocked(["get", "db", "--field", "username"]).out == "from-b", "\(pull)")
        // The remote holds both replicas' files; nobody ever committed a
        // conflict.
        let files = Self.git(origin, wa, ["ls-tree", "--name-only", "HEAD"]).stdout.split(separator: "\n").filter { $0.hasSuffix(".coffer-bundle") }
        #expect(Set(files.map { $0.prefix(32) }).count == 2, "\(files)")
    }

    @Test func badUsesSayWhatToDo() throws {
        let a = TestHome()
        a.initVault()
        let plain = a.path("plain")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        let notGit = a.unlocked(["sync", plain, "--git"], env: Self.gitEnv(a))
        #expect(notGit.status == 64 && notGit.stderr.contains("is not a git work tree") && notGit.stderr.contains("coffer: hint:"), "\(notGit)")
        let missing = a.unlocked(["sync", a.path("nowhere"), "--git"], env: Self.gitEnv(a))
        #expect(missing.status == 66 && !FileManager.default.fileExists(atPath: a.path("nowhere")), "\(missing)")
        _ = Self.git(a, a.root.path, ["init", "-q", a.path("repo")])
        let noRemote = a.unlocked(["sync", a.path("repo"), "--git", "--remote", "upstream"], env: Self.gitEnv(a))
        #expect(noRemote.status == 64 && noRemote.stderr.contains("no git remote named 'upstream'"), "\(noRemote)")
        #expect(a.unlocked(["sync", plain, "--git", "--dry-run"]).status == 64)
        #expect(a.unlocked(["sync", plain, "--remote", "origin"]).status == 64)
        // Nothing of this reached the folders.
        #expect(F.bundles(in: plain).isEmpty && F.bundles(in: a.path("repo")).isEmpty)
    }

    @Test func threeReplicasRunningAtOnceConverge() throws {
        let origin = TestHome()
        let bare = origin.path("remote.git")
        _ = Self.git(origin, origin.root.path, ["init", "-q", "--bare", bare])
        let (a, wa) = Self.machine(cloning: bare)
        a.initVault()
        F.expectOK(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n"))
        F.expectOK(a.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-0\n"))
        F.expectOK(a.unlocked(["sync", wa, "--git"], env: Self.gitEnv(a)))
        var machines = [(a, wa)]
        for _ in 0..<2 {
            let (h, w) = Self.machine(cloning: bare)
            F.expectOK(h.unlocked(["clone", w]))
            F.expectOK(h.unlocked(["sync", w, "--git"], env: Self.gitEnv(h)))
            machines.append((h, w))
        }
        for round in 1...2 {
            for (i, (h, _)) in machines.enumerated() {
                F.expectOK(h.unlocked(["add", "m\(i)/r\(round)", "--type", "custom", "--field", "v=\(i)-\(round)"]))
                F.expectOK(h.unlocked(["edit", "db", "--field", "field\(i)=\(round)"]))
            }
            // All three at the same moment: two pushes are rejected and
            // retried after a pull.
            let results = Results()
            let snapshot = machines
            DispatchQueue.concurrentPerform(iterations: snapshot.count) { i in
                let (h, w) = snapshot[i]
                results.append(h.unlocked(["sync", w, "--git"], env: Self.gitEnv(h)))
            }
            #expect(results.all.count == 3)
            for r in results.all { F.expectOK(r) }
        }
        // One more pass each brings everyone everything.
        for (h, w) in machines + machines { F.expectOK(h.unlocked(["sync", w, "--git"], env: Self.gitEnv(h))) }
        let lists = machines.map { $0.0.unlocked(["ls"]).stdout }
        #expect(Set(lists).count == 1, "\(lists)")
        for i in 0..<3 {
            for round in 1...2 { #expect(lists[0].contains("m\(i)/r\(round)")) }
        }
        let dbs = machines.map { $0.0.unlocked(["get", "db", "--json"]).stdout.split(separator: "\n").filter { !$0.contains("updatedAt") }.joined() }
        #expect(Set(dbs).count == 1, "\(dbs)")
        #expect(dbs[0].contains("field2") && dbs[0].contains("field0"))
        let conflicts = machines[0].0.unlocked(["conflicts", "--json"]).stdout
        #expect(conflicts.contains("\"conflicts\" : [\n\n  ]"), "\(conflicts)")
    }
}
