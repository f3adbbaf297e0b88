import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29's proof, end to end with the real programs: three members,
/// alice (A, who made the vault and knows its passphrase), bob (B) and
/// carol (C), each on a machine of their own (a home, a clone of one bare
/// git repository, a vault), syncing with `coffer sync DIR --git`. B and C
/// joined with `coffer clone --identity FILE` and never knew the
/// passphrase. Every refusal is checked as a user would: the exit code,
/// one `coffer: error:` line, the rule named, and the vault as it was.
@Suite(
    "a team shares a vault through a bare git repository (real coffer, real git)",
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1", "set COFFER_INTEROP=1 (make test-interop)"))
struct TeamGitInteropTests {
    /// One member's machine: its home (a vault at the default path), a
    /// clone of the team's repository, and how the vault unlocks: alice
    /// with the passphrase, the others with their identity file
    /// (`$COFFER_IDENTITY_FILE`).
    final class Machine: @unchecked Sendable {
        let home = TestHome()
        let name: String
        let bare: String
        /// The member identity file (mode 0600); nil for alice.
        let identityFile: String?
        var work: String { home.path("work") }

        init(_ name: String, bare: String, identity: Bool) {
            self.name = name
            self.bare = bare
            identityFile = identity ? home.path("\(name).identity") : nil
        }

        var gitEnv: [String: String] { ["GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"] }

        /// `coffer ARGS`, unlocked as this member unlocks.
        @discardableResult
        func coffer(_ args: [String], stdin: String? = nil, env: [String: String] = [:]) -> CLIResult {
            var e = gitEnv
            for (k, v) in env { e[k] = v }
            if let identityFile {
                e["COFFER_IDENTITY_FILE"] = identityFile
                return home.run(args, stdin: stdin, env: e)
            }
            return home.unlocked(args, stdin: stdin, env: e)
        }

        /// `coffer ARGS` given the vault's passphrase (a member who knew it).
        @discardableResult
        func withPassphrase(_ args: [String], _ passphrase: String) -> CLIResult {
            var e = gitEnv
            if let identityFile { e["COFFER_IDENTITY_FILE"] = identityFile }
            return home.run(args + ["--passphrase-fd", "3"], fd3: passphrase + "\n", env: e)
        }

        @discardableResult
        func sync(sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
            let r = coffer(["sync", work, "--git"])
            #expect(r.status == 0, "\(name): \(r)", sourceLocation: sourceLocation)
            return r
        }

        /// `git ARGS` in the work tree (or `dir`).
        @discardableResult
        func git(_ args: [String], in dir: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
            var env = home.environment
            for (k, v) in gitEnv { env[k] = v }
            let r = Spawn.run("git", args, stdin: nil, fd3: nil, environment: env, workDir: dir ?? work)
            #expect(r.status == 0, "\(name): git \(args.joined(separator: " ")): \(r)", sourceLocation: sourceLocation)
            return r
        }

        /// Commits and pushes a file by hand, as a member can with git alone.
        func push(file: String, message: String) {
            git(["add", "--", (file as NSString).lastPathComponent])
            git(["-c", "user.name=\(name)", "-c", "user.email=\(name)@example.invalid", "commit", "-q", "-m", message])
            git(["-c", "user.name=\(name)", "-c", "user.email=\(name)@example.invalid", "pull", "-q", "--rebase"])
            git(["push", "-q", "origin", "HEAD"])
        }

        func value(_ item: String, _ field: String) -> String? {
            let r = coffer(["get", item, "--field", field])
            return r.status == 0 ? r.out : nil
        }

        var vaultBytes: Data { home.vaultBytes() }
        var listing: String { coffer(["ls"]).stdout }
        /// This machine's replica id (hex).
        var replica: String {
            let r = coffer(["replicas", "--json"])
            guard let o = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
                let list = o["replicas"] as? [[String: Any]],
                let me = list.first(where: { ($0["local"] as? Bool) == true }),
                let id = me["id"] as? String
            else { return "" }
            return id
        }
    }

    /// The team: the bare repository, alice's vault with `db` (a login) and
    /// `svc/api` (an API key), bob and carol made members by alice and
    /// cloned from the repository with their identity files, every machine
    /// synced twice so that each has seen the others' signed files.
    struct Team {
        let origin = TestHome()
        var bare: String { origin.path("team.git") }
        let a: Machine
        let b: Machine
        let c: Machine
        var passphrase: String { a.home.passphrase }

        init() {
            Spawn.run(
                "git", ["init", "-q", "--bare", origin.path("team.git")], stdin: nil, fd3: nil, environment: origin.environment, workDir: origin.root.path
            )
            .expectOK("git init --bare")
            let bare = origin.path("team.git")
            a = Machine("alice", bare: bare, identity: false)
            b = Machine("bob", bare: bare, identity: true)
            c = Machine("carol", bare: bare, identity: true)
            a.git(["clone", "-q", bare, a.work], in: a.home.root.path)
            a.home.initVault()
            let alice = a.coffer(["identity", "new", "--name", "alice"])
            alice.expectOK("identity new")
            a.coffer(["members", "add", "alice", alice.out]).expectOK("members add alice")
            a.coffer(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n").expectOK("add db")
            a.coffer(["add", "svc/api", "--type", "api-key", "--secret", "key"], stdin: "sk-0\n").expectOK("add svc/api")
            // bob and carol make their identities (no vault needed) and
            // give alice the public line.
            for m in [b, c] {
                let made = m.home.run(["identity", "new", "--name", m.name, "--out", m.identityFile ?? ""])
                made.expectOK("identity new \(m.name)")
                #expect(made.out.hasPrefix("coffer1") && made.out.count == 117, "\(made)")
                a.coffer(["members", "add", m.name, made.out]).expectOK("members add \(m.name)")
            }
            a.sync()
            for m in [b, c] {
                m.git(["clone", "-q", bare, m.work], in: m.home.root.path)
                let cl = m.home.run(["clone", "--identity", m.identityFile ?? "", m.work])
                cl.expectOK("clone --identity \(m.name)")
                #expect(!cl.stderr.contains("assphrase"), "\(cl)")
                m.sync()
            }
            for m in [a, b, c] { m.sync() }
        }

        var all: [Machine] { [a, b, c] }
    }

    static func errorLines(_ r: CLIResult) -> [Substring] { r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") } }

    /// Expects one refusal line with `phrases`, a hint, `code`.
    static func expectRefused(
        _ r: CLIResult, _ code: Int32, _ phrases: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == code, "\(r)", sourceLocation: sourceLocation)
        #expect(errorLines(r).count == 1, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains("coffer: hint:"), "\(r)", sourceLocation: sourceLocation)
        for p in phrases { #expect(r.stderr.contains(p), "missing '\(p)': \(r)", sourceLocation: sourceLocation) }
    }

    @Test(
        "concurrent edits by alice and bob converge on all three: different fields merge, the same field is a conflict attributed to each member",
        .timeLimit(.minutes(2)))
    func concurrentEditsConvergeAndAreAttributed() throws {
        let t = Team()
        #expect(t.b.value("svc/api", "key") == "sk-0" && t.c.value("db", "username") == "u0")
        t.a.coffer(["edit", "db", "--field", "username=from-alice", "--field", "team=platform"]).expectOK("edit on A")
        t.b.coffer(["edit", "db", "--field", "username=from-bob", "--field", "url=https://db.example"]).expectOK("edit on B")
        t.a.sync()
        let merged = t.b.sync()
        #expect(merged.stderr.contains("new conflict: db field username"), "\(merged)")
        for m in [t.c, t.a, t.b, t.c] { m.sync() }
        for m in t.all {
            #expect(m.value("db", "team") == "platform", "\(m.name)")
            #expect(m.value("db", "url") == "https://db.example", "\(m.name)")
        }
        let dbs = t.all.map { $0.coffer(["get", "db", "--json"]).stdout.split(separator: "\n").filter { !$0.contains("updatedAt") }.joined() }
        #expect(Set(dbs).count == 1, "\(dbs)")
        // The same field: a conflict everywhere, each side named after its member.
        for m in t.all {
            let json = m.coffer(["conflicts", "--json"])
            SchemaValidation.expectValid(json.stdout, schema: "conflicts.schema.json")
            let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let conflicts = try #require(doc["conflicts"] as? [[String: Any]])
            #expect(conflicts.count == 1, "\(m.name): \(json)")
            let sides = (conflicts.first?["sides"] as? [[String: Any]]) ?? []
            let byValue = Dictionary(uniqueKeysWithValues: sides.compactMap { s in (s["value"] as? String).map { ($0, s["member"] as? String) } })
            #expect(byValue == ["from-alice": "alice", "from-bob": "bob"], "\(m.name): \(json)")
            let text = m.coffer(["conflicts"]).stdout
            #expect(text.contains("from-alice") && text.contains("(alice)") && text.contains("(bob)"), "\(m.name): \(text)")
            let history = m.coffer(["history", "db"]).stdout
            #expect(history.contains("username = from-alice  (by alice)"), "\(m.name): \(history)")
            #expect(history.contains("username = from-bob  (by bob)"), "\(m.name): \(history)")
            #expect(history.contains("team = platform  (by alice)") && history.contains("url = https://db.example  (by bob)"), "\(history)")
            let show = m.coffer(["show", "db"]).stdout
            #expect(show.contains("from-alice  written") && show.contains("(alice)") && show.contains("(bob)"), "\(m.name): \(show)")
        }
        // carol settles it; the settlement reaches everyone and is hers.
        t.c.coffer(["resolve", "db", "--field", "username", "--keep", "2"]).expectOK("resolve")
        for m in [t.c, t.a, t.b] { m.sync() }
        for m in t.all {
            #expect(m.coffer(["conflicts", "--json"]).stdout.contains("\"conflicts\" : [\n\n  ]"), "\(m.name)")
            #expect(m.coffer(["history", "db"]).stdout.contains("(by carol)"), "\(m.name)")
        }
        #expect(Set(t.all.map { $0.value("db", "username") }).count == 1)
    }

    @Test(
        "carol is removed: alice and bob go on; carol's replica is refused new bundles (77) and keeps what it read; her later files are refused",
        .timeLimit(.minutes(2)))
    func removalAndWhatTheRemovedMemberCanStillTry() throws {
        let t = Team()
        #expect(t.c.value("svc/api", "key") == "sk-0")
        // Before her removal, carol (a member) tries to write as bob.
        // a) Her own signed bundle, pushed under bob's file name: the name
        // is nobody's word, the header is; it is merged as hers, never as
        // bob's, and bob's next file replaces it.
        t.c.coffer(["add", "svc/from-carol", "--type", "api-key", "--secret", "key"], stdin: "by carol\n").expectOK("add on C")
        let underBobsName = t.c.work + "/" + t.b.replica + ".0000000000-0000000050.coffer-bundle"
        t.c.coffer(["export", "--out", underBobsName]).expectOK("export on C")
        t.c.push(file: underBobsName, message: "carol under bob's name")
        // Her own older file is still in the repository: her sync replaces
        // it (until then the others refuse it as an older file of hers,
        // publication-counter).
        t.c.sync()
        t.a.sync()
        #expect(t.a.coffer(["history", "svc/from-carol"]).stdout.contains("(by carol)"))
        #expect(!t.a.coffer(["history", "svc/from-carol"]).stdout.contains("(by bob)"))
        t.b.coffer(["edit", "db", "--field", "owner=bob"]).expectOK("edit on B")
        t.b.sync()
        t.a.sync()
        #expect(t.a.value("db", "owner") == "bob" && t.a.coffer(["history", "db"]).stdout.contains("owner = bob  (by bob)"))
        // b) Her bundle's header edited to claim bob's replica id (the 16
        // bytes after the vault id). The header is authenticated with the
        // stream and signed: the edit cannot be hidden without sealing and
        // signing it again, which the coffer program does not do for her
        // (a program of her own doing it meets rule replica-binding:
        // CofferKitTests' SignedWritesTests.carolWritingAsBobIsLeftOutOrRefused).
        let hers = t.c.home.path("hers.cb")
        t.c.coffer(["export", "--out", hers]).expectOK("export on C")
        var asBob = try Data(contentsOf: URL(fileURLWithPath: hers))
        let bobReplica = try #require(Self.bytes(hex: t.b.replica))
        #expect(asBob.subdata(in: 30..<46).map { String(format: "%02x", $0) }.joined() == t.c.replica)
        asBob.replaceSubrange(30..<46, with: bobReplica)
        let asBobName = t.c.work + "/" + t.b.replica + ".0000000100-0000000100.coffer-bundle"
        try asBob.write(to: URL(fileURLWithPath: asBobName))
        t.c.push(file: asBobName, message: "carol as bob")
        for m in [t.a, t.b] {
            let bytes = m.vaultBytes
            let listing = m.listing
            let imported = m.coffer(["import", asBobName])
            Self.expectRefused(imported, 65, ["fails authentication"])
            #expect(m.vaultBytes == bytes, "\(m.name)")
            let s = m.coffer(["sync", m.work, "--git"])
            #expect(s.status == 0 || s.status == 65, "\(m.name): \(s)")
            #expect(m.listing == listing, "\(m.name)")
        }
        // bob's next file replaces the one under his name; the folder is clean again.
        t.b.coffer(["edit", "db", "--field", "owner=bob again"]).expectOK("edit on B")
        t.b.sync()
        t.a.sync()
        t.c.sync()
        #expect(!FileManager.default.fileExists(atPath: t.a.work + "/" + (asBobName as NSString).lastPathComponent))

        let rm = t.a.coffer(["members", "rm", "carol"])
        rm.expectOK("members rm carol")
        #expect(rm.stderr.contains("'carol' keeps everything they already read"), "\(rm)")
        t.a.coffer(["add", "svc/after", "--type", "api-key", "--secret", "key"], stdin: "sk-after\n").expectOK("add after")
        t.a.sync()
        let adopted = t.b.sync()
        #expect(adopted.stderr.contains("adopted the new master key"), "\(adopted)")
        #expect(t.b.value("svc/after", "key") == "sk-after")
        t.b.coffer(["edit", "db", "--field", "note=bob after the removal"]).expectOK("edit on B")
        t.b.sync()
        t.a.sync()
        #expect(t.a.value("db", "note") == "bob after the removal")
        #expect(!t.a.coffer(["members", "ls"]).stdout.contains("carol"))

        // carol: one line, exit 77, nothing merged; what she read stays.
        let cBefore = t.c.vaultBytes
        let refused = t.c.coffer(["sync", t.c.work, "--git"])
        Self.expectRefused(refused, 77, ["coffer: error: you were removed from this vault", "not sealed to your identity"])
        #expect(t.c.vaultBytes == cBefore)
        #expect(t.c.value("svc/api", "key") == "sk-0")
        #expect(t.c.coffer(["get", "svc/after"]).status == 66)
        // The new files are in her work tree (git pulled them), unreadable to her.
        let fresh = t.c.home.path("again.coffer")
        let again = t.c.home.run(["clone", "--identity", t.c.identityFile ?? "", t.c.work, "--vault", fresh])
        Self.expectRefused(again, 77, ["not sealed to your identity"])
        #expect(!FileManager.default.fileExists(atPath: fresh))
        #expect(!again.stdout.contains("sk-after") && !refused.stdout.contains("sk-after"))

        // 1. carol's replica still opens her old vault: she writes, exports
        // (a file signed by her, under the old key) and pushes it with git.
        t.c.coffer(["add", "svc/evil", "--type", "api-key", "--secret", "key"], stdin: "from-removed-carol\n").expectOK("add on C")
        let forged = t.c.work + "/" + t.c.replica + ".0000000000-0000000099.coffer-bundle"
        t.c.coffer(["export", "--out", forged]).expectOK("export on C")
        t.c.push(file: forged, message: "carol after her removal")
        for m in [t.a, t.b] {
            let before = m.listing
            let s = m.sync()
            #expect(s.stderr.contains("written under an older master key"), "\(m.name): \(s)")
            #expect(m.listing == before && m.coffer(["get", "svc/evil"]).status == 66, "\(m.name)")
            let bytes = m.vaultBytes
            let imported = m.coffer(["import", m.work + "/" + (forged as NSString).lastPathComponent])
            Self.expectRefused(imported, 65, ["older than this vault's key epoch 1"])
            #expect(m.vaultBytes == bytes)
        }

        // 3. carol knew the passphrase: she adopts the new key with it.
        // Her replica has no membership any more: it writes unsigned files,
        // which a shared vault refuses (unsigned-in-shared-vault)...
        let adoptedByC = t.c.withPassphrase(["sync", t.c.work, "--git"], t.passphrase)
        #expect(adoptedByC.status == 0, "\(adoptedByC)")
        #expect(t.c.value("svc/after", "key") == "sk-after", "what the passphrase opens")
        for m in [t.a, t.b] {
            let before = m.listing
            let s = m.coffer(["sync", m.work, "--git"])
            #expect(s.status == 65, "\(m.name): \(s)")
            #expect(s.stderr.contains("breaks the bundle rule unsigned-in-shared-vault"), "\(m.name): \(s)")
            #expect(m.listing == before && m.coffer(["get", "svc/evil"]).status == 66, "\(m.name)")
        }
        // ...so she adds herself back and signs with her identity: refused
        // by signer-member, the membership unchanged.
        t.c.withPassphrase(["members", "add", "carol", t.c.home.run(["identity", "show", "--identity", t.c.identityFile ?? ""]).out], t.passphrase)
            .expectOK("carol adds herself")
        let readd = t.c.work + "/" + t.c.replica + ".0000000000-0000000300.coffer-bundle"
        t.c.coffer(["export", "--out", readd]).expectOK("export on C")
        #expect(t.c.home.run(["inspect", readd]).stdout.contains("format:     6"), "signed by carol")
        t.c.push(file: readd, message: "carol is back")
        for m in [t.a, t.b] {
            let before = m.listing
            let members = m.coffer(["members", "ls"]).stdout
            let s = m.coffer(["sync", m.work, "--git"])
            #expect(s.status == 65, "\(m.name): \(s)")
            #expect(s.stderr.contains("breaks the bundle rule signer-member") && s.stderr.contains("member 'carol'"), "\(m.name): \(s)")
            #expect(m.listing == before && m.coffer(["get", "svc/evil"]).status == 66, "\(m.name)")
            #expect(m.coffer(["members", "ls"]).stdout == members && !members.contains("carol"), "\(m.name): \(members)")
        }
    }

    @Test("the git remote reset to an older commit of bob's file is noticed (publication-counter)", .timeLimit(.minutes(2)))
    func aRemoteResetToAnOlderFileIsNoticed() throws {
        let t = Team()
        t.b.coffer(["edit", "db", "--field", "url=https://one.example"]).expectOK("edit 1")
        t.b.sync()
        let old = t.b.git(["rev-parse", "HEAD"]).out
        let branch = t.b.git(["rev-parse", "--abbrev-ref", "HEAD"]).out
        let olderBobFiles = Set(SyncFixture.bundles(in: t.b.work).filter { ($0 as NSString).lastPathComponent.hasPrefix(t.b.replica) })
        t.b.coffer(["edit", "db", "--field", "url=https://two.example"]).expectOK("edit 2")
        t.b.sync()
        t.a.sync()
        #expect(t.a.value("db", "url") == "https://two.example")
        // The host (or whoever can push with --force) rolls the branch back;
        // alice's machine takes the remote as it now is.
        t.a.git(["push", "-q", "--force", "origin", "\(old):refs/heads/\(branch)"])
        t.a.git(["fetch", "-q", "origin"])
        t.a.git(["reset", "-q", "--hard", "origin/\(branch)"])
        let served = SyncFixture.bundles(in: t.a.work).filter { ($0 as NSString).lastPathComponent.hasPrefix(t.b.replica) }
        #expect(Set(served.map { ($0 as NSString).lastPathComponent }) == Set(olderBobFiles.map { ($0 as NSString).lastPathComponent }), "\(served)")
        let before = t.a.listing
        let s = t.a.coffer(["sync", t.a.work, "--git"])
        #expect(s.status == 65, "\(s)")
        #expect(s.stderr.contains("publication-counter") && s.stderr.contains("member 'bob'"), "\(s)")
        #expect(t.a.listing == before && t.a.value("db", "url") == "https://two.example")
        // The older file itself, given to alice's replica, says what happened.
        let older = try #require(SyncFixture.newest(in: t.a.work, replica: t.b.replica))
        let bytes = t.a.vaultBytes
        let imported = t.a.coffer(["import", older])
        Self.expectRefused(imported, 65, ["breaks the bundle rule publication-counter", "member 'bob'", "served an older file"])
        #expect(t.a.vaultBytes == bytes)
    }

    @Test(
        "a read-only CI identity reads a secret through coffer run with no passphrase; its writes are refused everywhere",
        .timeLimit(.minutes(2)))
    func readOnlyCIIdentity() throws {
        let t = Team()
        let ci = Machine("ci", bare: t.bare, identity: true)
        let made = ci.home.run(["identity", "new", "--name", "ci-deploy", "--out", ci.identityFile ?? ""])
        made.expectOK("identity new ci")
        t.a.coffer(["members", "add", "ci-deploy", made.out, "--read-only"]).expectOK("members add --read-only")
        #expect(t.a.coffer(["members", "ls"]).stdout.contains("ci-deploy\tread-only\t"))
        t.a.sync()
        ci.git(["clone", "-q", t.bare, ci.work], in: ci.home.root.path)
        // The job: the identity from a CI secret, no passphrase anywhere.
        let job = ci.home.run(["clone", ci.work], env: ["COFFER_IDENTITY_FILE": ci.identityFile ?? ""])
        job.expectOK("clone in CI")
        let run = ci.home.run(
            ["run", "--", "/bin/sh", "-c", "test \"$API_KEY\" = sk-0 && test -z \"$COFFER_IDENTITY_FILE\" && echo deployed"],
            env: ["COFFER_IDENTITY_FILE": ci.identityFile ?? "", "API_KEY": "coffer://svc/api/key"])
        #expect(run.status == 0 && run.out == "deployed", "\(run)")
        // Its writes: export refused (77), sync publishes nothing.
        ci.coffer(["add", "ci/leak", "--type", "api-key", "--secret", "key"], stdin: "from-ci\n").expectOK("add in CI")
        let export = ci.coffer(["export", "--out", ci.home.path("ci.cb")])
        Self.expectRefused(export, 77, ["this identity is read-only in this vault"])
        #expect(!FileManager.default.fileExists(atPath: ci.home.path("ci.cb")))
        let s = ci.sync()
        #expect(s.stderr.contains("read-only"), "\(s)")
        #expect(!SyncFixture.replicas(in: ci.work).contains(ci.replica))
        // It makes itself read-write in its own replica and publishes:
        // every member refuses the file (signer-member), nothing changes.
        ci.coffer(["members", "add", "ci-deploy", made.out]).expectOK("ci promotes itself")
        ci.coffer(["sync", ci.work, "--git"])
        #expect(SyncFixture.replicas(in: ci.work).contains(ci.replica), "the promoted replica published")
        for m in t.all {
            let before = m.listing
            let r = m.coffer(["sync", m.work, "--git"])
            #expect(r.status == 65, "\(m.name): \(r)")
            #expect(r.stderr.contains("breaks the bundle rule signer-member") && r.stderr.contains("'ci-deploy'"), "\(m.name): \(r)")
            #expect(m.listing == before && m.coffer(["get", "ci/leak"]).status == 66, "\(m.name)")
            #expect(m.coffer(["members", "ls"]).stdout.contains("ci-deploy\tread-only\t"), "\(m.name)")
        }
    }

    @Test(
        "bad input: a malformed public identity, a key sealed for another vault, a bundle signed by an unknown key: one line, exit 65, the vault unchanged",
        .timeLimit(.minutes(2)))
    func badInput() throws {
        let t = Team()
        let bobPublic = t.b.home.run(["identity", "show", "--identity", t.b.identityFile ?? ""]).out
        // A mistyped letter, a cut line, an age recipient, a secret identity.
        var typo = Array(bobPublic)
        typo[40] = typo[40] == "q" ? "p" : "q"
        let secretLine = try String(contentsOfFile: t.b.identityFile ?? "", encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("coffer-secret1") }
        let aBefore = t.a.vaultBytes
        for bad in [String(typo), String(bobPublic.dropLast(9)), "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p", String(secretLine ?? "")] {
            let r = t.a.coffer(["members", "add", "mallory", bad])
            Self.expectRefused(r, 65, [])
            #expect(!r.stderr.contains(String((secretLine ?? "").dropFirst(20))), "a secret echoed: \(r)")
        }
        #expect(t.a.vaultBytes == aBefore)

        // Another vault (zed's) whose members include bob, as many as ours.
        let other = Machine("zed", bare: t.bare, identity: false)
        other.home.initVault()
        let zed = other.coffer(["identity", "new", "--name", "zed"])
        other.coffer(["members", "add", "zed", zed.out]).expectOK("zed")
        other.coffer(["members", "add", "bob", bobPublic]).expectOK("bob in zed's vault")
        let yan = other.home.run(["identity", "new", "--name", "yan", "--out", other.home.path("yan.identity")])
        other.coffer(["members", "add", "yan", yan.out]).expectOK("yan")
        let theirs = other.home.path("theirs.cb")
        other.coffer(["export", "--out", theirs]).expectOK("export zed's vault")
        // Its bundle, sealed to bob, given to bob's replica: another vault.
        let bBefore = t.b.vaultBytes
        Self.expectRefused(t.b.coffer(["import", theirs]), 65, ["belongs to another vault"])
        #expect(t.b.vaultBytes == bBefore)
        // Its boxes spliced into one of our bundles (a hostile host): bob's
        // box opens, but says it is for another vault (sealed-key-binding).
        let ours = t.a.home.path("ours.cb")
        t.a.coffer(["export", "--out", ours]).expectOK("export ours")
        let spliced = t.a.home.path("spliced.cb")
        try Self.spliceSealedKeys(from: theirs, into: ours, out: spliced)
        let target = t.b.home.path("spliced.coffer")
        let cl = t.b.home.run(["clone", "--identity", t.b.identityFile ?? "", spliced, "--vault", target])
        Self.expectRefused(cl, 65, ["sealed-key-binding"])
        #expect(!FileManager.default.fileExists(atPath: target))
        Self.expectRefused(t.b.coffer(["import", spliced]), 65, [])
        #expect(t.b.vaultBytes == bBefore)

        // A signature by a key that is no member's: mallory knows the
        // passphrase, makes an identity, adds it in her own replica and
        // signs; without adding it her replica writes unsigned files.
        let mallory = Machine("mallory", bare: t.bare, identity: false)
        mallory.home.unlocked(["clone", ours]).expectOK("mallory clones with the passphrase")
        mallory.coffer(["add", "svc/mallory", "--type", "api-key", "--secret", "key"], stdin: "m\n").expectOK("mallory writes")
        let unsigned = mallory.home.path("unsigned.cb")
        mallory.coffer(["export", "--out", unsigned]).expectOK("export unsigned")
        let mid = mallory.coffer(["identity", "new", "--name", "mallory"])
        mallory.coffer(["members", "add", "mallory", mid.out]).expectOK("mallory adds herself")
        let signed = mallory.home.path("signed.cb")
        mallory.coffer(["export", "--out", signed]).expectOK("export signed")
        #expect(mallory.home.run(["inspect", signed]).stdout.contains("format:     6"))
        for m in t.all {
            let before = m.vaultBytes
            Self.expectRefused(m.coffer(["import", unsigned]), 65, ["unsigned-in-shared-vault"])
            Self.expectRefused(m.coffer(["import", signed]), 65, ["signer-member", "'mallory'"])
            #expect(m.vaultBytes == before, "\(m.name)")
            #expect(!m.coffer(["members", "ls"]).stdout.contains("mallory"))
        }
    }

    /// Replaces the sealed keys of `ours` (format 6: the body ends with
    /// u16 n, n boxes of 142 bytes, the publisher key and the counter) with
    /// those of `theirs`, which must hold as many.
    static func spliceSealedKeys(from theirs: String, into ours: String, out: String) throws {
        let t = try Data(contentsOf: URL(fileURLWithPath: theirs))
        var o = try Data(contentsOf: URL(fileURLWithPath: ours))
        func boxes(_ d: Data) throws -> (Range<Int>, Int) {
            let l = Int(d[10]) << 24 | Int(d[11]) << 16 | Int(d[12]) << 8 | Int(d[13])
            let end = 14 + l - 40
            // Find n: the u16 just before n boxes.
            for n in 1...16 {
                let start = end - 142 * n
                if start - 2 > 14, Int(d[start - 2]) << 8 | Int(d[start - 1]) == n { return (start..<end, n) }
            }
            throw CocoaError(.fileReadCorruptFile)
        }
        let (tr, tn) = try boxes(t)
        let (or, on) = try boxes(o)
        #expect(tn == on, "as many boxes in both")
        o.replaceSubrange(or, with: t.subdata(in: tr))
        try o.write(to: URL(fileURLWithPath: out))
    }

    static func bytes(hex: String) -> Data? {
        var out = Data()
        var it = hex.makeIterator()
        while let h = it.next(), let l = it.next() {
            guard let b = UInt8(String([h, l]), radix: 16) else { return nil }
            out.append(b)
        }
        return out.count == 16 ? out : nil
    }
}

extension CLIResult {
    func expectOK(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "\(what): \(self)", sourceLocation: sourceLocation)
    }
}
