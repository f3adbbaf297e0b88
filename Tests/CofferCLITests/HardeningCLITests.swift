import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 12's smaller findings, black-box: the clone KDF ceiling,
/// dangerous `coffer env` names, `inject --out` through another user's
/// link in a sticky folder.
@Suite("hardening: clone KDF ceiling, env names, protected links")
struct HardeningCLITests {
    /// A vault with one synced item and its full bundle `full.cb`.
    static func exported() -> TestHome {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        #expect(home.unlocked(["export", "--out", "full.cb"]).status == 0)
        return home
    }

    /// Sets the u32 at `offset` of the clear header of `full.cb`, writing `name`.
    static func patch(_ home: TestHome, _ name: String, offset: Int, value: UInt32) {
        var b = Array((try? Data(contentsOf: URL(fileURLWithPath: home.path("full.cb")))) ?? Data())
        for i in 0..<4 { b[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
        try! Data(b).write(to: URL(fileURLWithPath: home.path(name)))
    }

    // Header body offsets (docs/bundle-format.md §Header body): the body
    // starts at 14; memory at +50, passes at +54, lanes at +58.
    static let memoryOffset = 64, passesOffset = 68, lanesOffset = 72

    @Test func cloneRefusesKDFAboveTheCeilingBeforeAskingAnything() {
        let home = Self.exported()
        Self.patch(home, "mem.cb", offset: Self.memoryOffset, value: 4 * 1024 * 1024)
        // No passphrase given: the refusal comes first.
        var r = home.run(["clone", "mem.cb", "--vault", "b.coffer"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("coffer: error: mem.cb asks for Argon2id memory 4 GiB (ceiling 1 GiB)"), "\(r)")
        #expect(r.stderr.contains("--allow-expensive-kdf"))
        #expect(!FileManager.default.fileExists(atPath: home.path("b.coffer")))
        Self.patch(home, "passes.cb", offset: Self.passesOffset, value: 11)
        r = home.unlocked(["clone", "passes.cb", "--vault", "b.coffer"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("passes 11 (ceiling 10)") && !r.stderr.contains("memory"), "\(r)")
        Self.patch(home, "lanes.cb", offset: Self.lanesOffset, value: 9)
        r = home.unlocked(["clone", "lanes.cb", "--vault", "b.coffer"])
        #expect(r.status == 65 && r.stderr.contains("lanes 9 (ceiling 8)"), "\(r)")
        // The flag lets Argon2id run with the (tampered) parameters, which
        // then do not unwrap the key: the passphrase is reported wrong.
        r = home.unlocked(["clone", "passes.cb", "--vault", "b.coffer", "--allow-expensive-kdf"])
        #expect(r.status == 77, "\(r)")
        #expect(!FileManager.default.fileExists(atPath: home.path("b.coffer")))
        // An untouched bundle clones.
        #expect(home.unlocked(["clone", "full.cb", "--vault", "b.coffer"]).status == 0)
    }

    @Test func envRefusesDangerousNamesUnlessAllowed() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "x/ld", "--type", "custom", "--field", "preload=/tmp/evil.so"]).status == 0)
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        var r = home.unlocked(["env", "--format", "shell"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("coffer: error: 'x/ld' field 'preload' would set LD_PRELOAD"), "\(r)")
        #expect(r.stderr.contains("--allow-dangerous-names"))
        // A mapping chosen with --env-var is checked too.
        #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=PROMPT_COMMAND"]).status == 0)
        r = home.unlocked(["env", "work/openai"])
        #expect(r.status == 65 && r.stderr.contains("PROMPT_COMMAND"), "\(r)")
        for name in ["BASH_ENV", "PATH", "IFS", "PS1", "NODE_OPTIONS", "SHELLOPTS", "ENV", "COFFER_SESSION"] {
            #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=\(name)"]).status == 0)
            let e = home.unlocked(["env", "work/openai"])
            #expect(e.status == 65 && e.stderr.contains("would set \(name)"), "\(name): \(e)")
        }
        r = home.unlocked(["env", "work/openai", "--allow-dangerous-names"])
        #expect(r.status == 0 && r.stdout == "COFFER_SESSION=sk-1\n", "\(r)")
        #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=OPENAI_API_KEY"]).status == 0)
        r = home.unlocked(["env", "work/openai"])
        #expect(r.status == 0 && r.stdout == "OPENAI_API_KEY=sk-1\n", "\(r)")
    }

    /// Issue 24 item 5: program-control variables are refused by pattern,
    /// one line naming the variable and the per-item opt-in, which is
    /// stored in the item (it syncs) and covers only the names it lists.
    @Test func envRefusesProgramControlVariablesUnlessTheItemAllowsThem() throws {
        let home = TestHome()
        home.initVault()
        // The review's item: `eval "$(coffer env x/git)"; git log` ran `id`.
        #expect(home.unlocked(["add", "x/git", "--type", "custom", "--field", "pager=sh -c \"id>&2\""]).status == 0)
        var r = home.unlocked(["env", "x/git", "--format", "shell"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stdout.isEmpty)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r)")
        #expect(r.stderr.hasPrefix("coffer: error: 'x/git' field 'pager' would set GIT_PAGER"), "\(r)")
        #expect(r.stderr.contains("coffer edit x/git --allow-env-var GIT_PAGER"), "\(r)")
        #expect(!r.stderr.contains("id>&2"))
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        for name in [
            "GIT_PAGER", "LUA_INIT", "OPENSSL_CONF", "PYTHONWARNINGS", "HTTPS_PROXY", "https_proxy", "http_proxy", "ALL_PROXY",
            "PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_SSH_COMMAND", "GIT_DIR", "LESS", "LESSOPEN",
            "PYTHONBREAKPOINT", "PERL5DB", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "LUA_PATH", "OPENSSL_ENGINES",
            "BASH_ENV", "ENV", "PROMPT_COMMAND", "PS4", "IFS", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GCONV_PATH", "SSLKEYLOGFILE",
            "MALLOC_PERTURB_", "GLIBC_TUNABLES", "HOSTALIASES", "NODE_PATH", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS1", "ZDOTDIR",
            "GNUPGHOME", "SSH_ASKPASS", "path", "VIMINIT", "XDG_CONFIG_HOME", "SSL_CERT_FILE", "NPM_CONFIG_SCRIPT_SHELL",
        ] {
            #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=\(name)"]).status == 0)
            let e = home.unlocked(["env", "work/openai"])
            #expect(e.status == 65 && e.stderr.contains("would set \(name)") && e.stdout.isEmpty, "\(name): \(e)")
        }
        // Credentials whose names merely look alike are not refused.
        for name in ["OPENAI_KEY", "GITHUB_TOKEN", "GITLAB_TOKEN", "NODE_AUTH_TOKEN", "RUBYGEMS_API_KEY", "NPM_TOKEN"] {
            #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=\(name)"]).status == 0)
            let e = home.unlocked(["env", "work/openai"])
            #expect(e.status == 0 && e.stdout == "\(name)=sk-1\n", "\(name): \(e)")
        }
        // The per-item opt-in: stored in the item, for the names it lists.
        r = home.unlocked(["edit", "x/git", "--allow-env-var", "GIT_PAGER"])
        #expect(r.status == 0, "\(r)")
        r = home.unlocked(["env", "x/git", "--format", "shell"])
        #expect(r.status == 0 && r.stdout == "export GIT_PAGER='sh -c \"id>&2\"'\n", "\(r)")
        // Another field mapped to another guarded name is still refused.
        #expect(home.unlocked(["edit", "x/git", "--field", "ssh=evil", "--env-var", "ssh=GIT_SSH_COMMAND"]).status == 0)
        r = home.unlocked(["env", "x/git"])
        #expect(r.status == 65 && r.stderr.contains("would set GIT_SSH_COMMAND") && r.stderr.contains("--allow-env-var GIT_SSH_COMMAND"), "\(r)")
        #expect(home.unlocked(["edit", "x/git", "--env-var", "ssh=-"]).status == 0)
        // cp keeps it (the user's own copy); a Coffer JSON export does not
        // carry it into another vault, and an overwriting import keeps it.
        #expect(home.unlocked(["cp", "x/git", "z/git"]).status == 0)
        r = home.unlocked(["env", "z/git"])
        #expect(r.status == 0 && r.stdout.hasPrefix("GIT_PAGER="), "\(r)")
        #expect(home.unlocked(["export", "--format", "json", "--plaintext", "--out", "all.json"]).status == 0)
        let other = TestHome()
        other.initVault()
        #expect(other.unlocked(["import", "--from", "coffer-json", home.path("all.json")]).status == 0)
        r = other.unlocked(["env", "x/git"])
        #expect(r.status == 65 && r.stderr.contains("would set GIT_PAGER"), "\(r)")
        #expect(home.unlocked(["edit", "x/git", "--no-env-var", "ssh"]).status == 0)
        r = home.unlocked(["import", "--from", "coffer-json", "all.json", "--on-conflict", "overwrite"])
        #expect(r.status == 0, "\(r)")
        r = home.unlocked(["env", "x/git"])
        #expect(r.status == 0 && r.stdout.hasPrefix("GIT_PAGER=") && !r.stdout.contains("GIT_SSH_COMMAND"), "\(r)")
        // Allowing a name that is not guarded is said (nothing to allow).
        r = home.unlocked(["edit", "x/git", "--allow-env-var", "OPENAI_KEY"])
        #expect(r.status == 0 && r.stderr.contains("OPENAI_KEY is not a guarded name"), "\(r)")
        // Another item does not inherit it.
        #expect(home.unlocked(["add", "y/git", "--type", "custom", "--field", "pager=less"]).status == 0)
        r = home.unlocked(["env", "y/git"])
        #expect(r.status == 65 && r.stderr.contains("'y/git' field 'pager' would set GIT_PAGER"), "\(r)")
        // It travels with the item: a clone of a bundle honours it.
        #expect(home.unlocked(["export", "--out", "full.cb"]).status == 0)
        #expect(home.unlocked(["clone", "full.cb", "--vault", "b.coffer"]).status == 0)
        r = home.unlocked(["env", "x/git", "--vault", "b.coffer"])
        #expect(r.status == 0 && r.stdout.contains("GIT_PAGER="), "\(r)")
        // Invalid names are a usage error; --no-allow-env-var takes it back.
        r = home.unlocked(["edit", "x/git", "--allow-env-var", "GIT PAGER"])
        #expect(r.status == 64 && r.stderr.contains("invalid --allow-env-var"), "\(r)")
        #expect(home.unlocked(["edit", "x/git", "--no-allow-env-var", "GIT_PAGER"]).status == 0)
        r = home.unlocked(["env", "x/git"])
        #expect(r.status == 65 && r.stderr.contains("would set GIT_PAGER"), "\(r)")
    }

    /// A vault holding work/openai, a template t.tpl using it, and a
    /// sticky world-writable folder `shared` (as /tmp is).
    static func stickyFolderHome() throws -> (TestHome, String) {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        try "k={{ coffer://work/openai }}\n".write(toFile: home.path("t.tpl"), atomically: true, encoding: .utf8)
        let shared = home.path("shared")
        mkdir(shared, 0o777)
        chmod(shared, 0o1777)
        return (home, shared)
    }

    @Test func injectRefusesAnotherUsersLinkInAStickyFolder() throws {
        guard geteuid() == 0 else { return } // making a link owned by someone else needs root
        let (home, shared) = try Self.stickyFolderHome()
        let victim = home.path("victim.txt")
        try "precious\n".write(toFile: victim, atomically: true, encoding: .utf8)
        let link = shared + "/out.env"
        symlink(victim, link)
        lchown(link, 65534, 65534) // nobody
        var r = home.unlocked(["inject", "-i", "t.tpl", "-o", link])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.contains("symbolic link owned by another user"), "\(r)")
        #expect((try? String(contentsOfFile: victim, encoding: .utf8)) == "precious\n")
        // The same link owned by the user (or outside a sticky folder) is followed.
        lchown(link, geteuid(), getegid())
        r = home.unlocked(["inject", "-i", "t.tpl", "-o", link])
        #expect(r.status == 0, "\(r)")
        #expect((try? String(contentsOfFile: victim, encoding: .utf8)) == "k=sk-1\n")
    }

    /// Issue 24 item 6: the protected-symlink rule applies to every
    /// component of an output path, not only the last: a directory link
    /// owned by another user in a sticky shared folder is not followed.
    @Test func outputsRefuseAnotherUsersDirectoryLinkInAStickyFolder() throws {
        guard geteuid() == 0 else { return } // making a link owned by someone else needs root
        let (home, shared) = try Self.stickyFolderHome()
        let victims = home.path("victims")
        mkdir(victims, 0o700)
        mkdir(victims + "/sub", 0o700)
        for f in ["x", "sub/x"] { try "precious\n".write(toFile: victims + "/" + f, atomically: true, encoding: .utf8) }
        let link = shared + "/d"
        symlink(victims, link)
        lchown(link, 65534, 65534) // nobody
        let attempts: [[String]] = [
            ["inject", "-i", "t.tpl", "-o", link + "/x"],
            ["inject", "-i", "t.tpl", "-o", link + "/sub/x"],
            ["inject", "-i", "t.tpl", "-o", link + "/sub/../x"],
            ["export", "--format", "csv", "--plaintext", "--out", link + "/x"],
            ["export", "--out", link + "/x"],
            ["inject", "-i", "t.tpl", "-o", link + "/new-file"],
        ]
        for args in attempts {
            let r = home.unlocked(args)
            #expect(r.status == 73, "\(args): \(r)")
            #expect(r.stderr.contains("\(link) is a symbolic link owned by another user (uid 65534)"), "\(args): \(r)")
            #expect(r.stderr.split(separator: "\n").count <= 2, "\(r)")
        }
        // A link to a link: the second one is checked in its own folder.
        let hop = home.path("hop")
        symlink(link + "/x", hop)
        var r = home.unlocked(["inject", "-i", "t.tpl", "-o", hop])
        #expect(r.status == 73 && r.stderr.contains("owned by another user"), "\(r)")
        for f in ["x", "sub/x"] {
            #expect((try? String(contentsOfFile: victims + "/" + f, encoding: .utf8)) == "precious\n", "\(f)")
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: victims))?.sorted() == ["sub", "x"])
        // The same link owned by the user is followed; so is a foreign
        // link in a folder that is not sticky.
        lchown(link, geteuid(), getegid())
        r = home.unlocked(["inject", "-i", "t.tpl", "-o", link + "/sub/x"])
        #expect(r.status == 0, "\(r)")
        #expect((try? String(contentsOfFile: victims + "/sub/x", encoding: .utf8)) == "k=sk-1\n")
        lchown(link, 65534, 65534)
        chmod(shared, 0o777)
        r = home.unlocked(["inject", "-i", "t.tpl", "-o", link + "/x"])
        #expect(r.status == 0, "\(r)")
        #expect((try? String(contentsOfFile: victims + "/x", encoding: .utf8)) == "k=sk-1\n")
    }

    @Test func lockAllEndsSessionsInTheTmpFallbackFolderToo() throws {
        let home = SessionTests.homeWithItem()
        let tmp = home.path("tmp")
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        home.environment["TMPDIR"] = tmp
        // One session from a shell with XDG_RUNTIME_DIR, one from a shell
        // without it (kept under $TMPDIR/coffer-UID).
        let normal = try SessionTests.unlock(home)
        let xdg = home.environment.removeValue(forKey: "XDG_RUNTIME_DIR")
        let fallback = try SessionTests.unlock(home)
        #expect(FileManager.default.fileExists(atPath: tmp + "/coffer-\(geteuid())"))
        #expect(SessionTests.get(home, token: fallback).status == 0)
        home.environment["XDG_RUNTIME_DIR"] = xdg
        let r = home.run(["lock", "--all"])
        #expect(r.status == 0 && r.stderr.contains("ended 2 sessions"), "\(r)")
        SessionTests.expectSessionRefused(SessionTests.get(home, token: normal), mentioning: "session ended", token: normal)
        home.environment.removeValue(forKey: "XDG_RUNTIME_DIR")
        SessionTests.expectSessionRefused(SessionTests.get(home, token: fallback), mentioning: "session ended", token: fallback)
    }

    /// libsodium ignores a failed mlock; coffer reports it once, at exit.
    @Test func failedMemoryLockIsReported() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")
        else { return } // needs root to run as another user, whose mlock the limit binds
        let home = TestHome()
        let dir = home.path("nobody")
        mkdir(dir, 0o777)
        chmod(dir, 0o777)
        chmod(home.root.path, 0o755)
        try "pw-pw-pw-pw\n".write(toFile: dir + "/p", atomically: true, encoding: .utf8)
        chmod(dir + "/p", 0o644)
        let args =
            [
                "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/prlimit", "--memlock=0:0", CofferBinary.path,
                "init", "--vault", dir + "/v.coffer", "--passphrase-file", dir + "/p",
            ] + FastKDF.arguments
        var env = home.environment
        env["HOME"] = dir
        env.removeValue(forKey: "XDG_RUNTIME_DIR")
        let r = Spawn.run("/usr/bin/setpriv", args, stdin: nil, fd3: nil, environment: env, workDir: dir)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("coffer: warning: cannot lock key memory into RAM (mlock:"), "\(r)")
        #expect(r.stderr.contains("RLIMIT_MEMLOCK 0 KiB"), "\(r)")
        // With locking allowed there is no such warning.
        let ok = home.unlocked(["init"] + FastKDF.arguments)
        #expect(ok.status == 0 && !ok.stderr.contains("lock key memory"), "\(ok)")
    }

    /// The committed bundle test kit (Tests/CofferKitTests/Fixtures/bundle-kit).
    static let kit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("CofferKitTests/Fixtures/bundle-kit")

    /// Forged, correctly encrypted bundles that break a validation rule
    /// are refused by the binary: exit 65, one error line naming the rule,
    /// the vault file byte for byte unchanged, `--dry-run` too, and `sync`
    /// reports them and leaves no temporary file.
    @Test func forgedBundlesAreRefusedWholeByTheBinary() throws {
        let home = TestHome()
        home.passphrase = "coffer test kit passphrase"
        let clone = home.unlocked(["clone", Self.kit.appendingPathComponent("full.cb").path])
        #expect(clone.status == 0, "\(clone)")
        let before = home.vaultBytes()
        for (file, rule) in [
            ("rule-counter-range", "counter-range"), ("rule-exact-dot", "exact-dot"), ("rule-summary-bound", "summary-bound"),
            ("rule-written-after-bundle", "written-after-bundle"), ("rule-future-bundle", "future-bundle"),
            ("rule-concurrent-versions", "concurrent-versions"), ("payload-register-name-field", "register-name"),
        ] {
            let path = Self.kit.appendingPathComponent("\(file).cb").path
            for dry in [["--dry-run"], []] {
                let r = home.unlocked(["import", path] + dry)
                #expect(r.status == 65, "\(file) \(dry): \(r)")
                #expect(r.stderr.hasPrefix("coffer: error: \(path) breaks the bundle rule \(rule) ("), "\(r.stderr)")
                #expect(r.stderr.split(separator: "\n").count == 2, "\(r.stderr)") // error + hint
                #expect(!r.stderr.contains("forged")) // no decrypted value in the message
            }
        }
        #expect(home.vaultBytes() == before)
        // sync: the forged bundle is reported (65); the folder gets this
        // replica's bundle and nothing else.
        let dir = home.path("syncdir")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.kit.appendingPathComponent("rule-counter-range.cb").path, toPath: dir + "/evil.coffer-bundle")
        let sync = home.unlocked(["sync", dir])
        #expect(sync.status == 65, "\(sync)")
        #expect(sync.stderr.contains("counter-range"), "\(sync)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(files.count == 2 && files.allSatisfy { $0.hasSuffix(".coffer-bundle") && !$0.hasPrefix(".") }, "\(files)")
        // A forged summary file with a counter of 2^63 for export --since.
        var summary = Array("COFFERS\n".utf8) + [0, 1] + [UInt8](repeating: 0x11, count: 16) + [UInt8](repeating: 0xee, count: 16)
        summary += [UInt8](repeating: 0, count: 8) + [0, 1] + [UInt8](repeating: 0xee, count: 16) + [0x80, 0, 0, 0, 0, 0, 0, 0]
        try Data(summary).write(to: URL(fileURLWithPath: home.path("forged.summary")))
        let ex = home.unlocked(["export", "--since", "forged.summary", "--out", "d.cb"])
        #expect(ex.status == 65, "\(ex)")
        #expect(ex.stderr.contains("forged.summary breaks the summary rule counter-range"), "\(ex)")
        #expect(!FileManager.default.fileExists(atPath: home.path("d.cb")))
        let litter = try FileManager.default.contentsOfDirectory(atPath: home.root.path).filter { $0.hasPrefix(".d.cb") }
        #expect(litter.isEmpty, "\(litter)")
    }
}
