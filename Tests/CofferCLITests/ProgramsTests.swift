import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer read`, `run`, `inject`, `env` through the built binary, with
/// real child processes (docs/references.md).
@Suite("secrets into programs, black-box")
struct ProgramsTests {
    /// A vault with: work/openai (api-key), "my stuff/db one" (login, a
    /// name with a space and a slash), a/b (custom, field c) next to a/b/c.
    static func home() -> TestHome {
        let home = TestHome()
        home.initVault()
        var r = home.coffer(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-test-123\n")
        precondition(r.status == 0, "\(r)")
        r = home.coffer(["add", "my stuff/db one", "--type", "login", "--field", "username=bob smith", "--secret", "password"], stdin: "pa ss'word\n")
        precondition(r.status == 0, "\(r)")
        r = home.coffer(["add", "a/b", "--type", "custom", "--field", "c=field-c", "--field", "x/y=slashed"])
        precondition(r.status == 0, "\(r)")
        r = home.coffer(["add", "a/b/c", "--type", "api-key", "--secret", "key"], stdin: "item-abc\n")
        precondition(r.status == 0, "\(r)")
        return home
    }

    static func printVar(_ name: String) -> [String] { ["/bin/sh", "-c", "printf %s \"$\(name)\""] }

    // MARK: read

    @Test func readPrimaryFieldAndNamedFields() {
        let home = Self.home()
        #expect(home.coffer(["read", "coffer://work/openai"]).stdout == "sk-test-123\n")
        #expect(home.coffer(["read", "coffer://work/openai/key"]).stdout == "sk-test-123\n")
        #expect(home.coffer(["read", "-n", "coffer://work/openai"]).stdout == "sk-test-123")
        // Spaces and slashes in the name, spaces percent-encoded or not.
        #expect(home.coffer(["read", "coffer://my stuff/db one"]).stdout == "pa ss'word\n")
        #expect(home.coffer(["read", "coffer://my stuff/db one/username"]).stdout == "bob smith\n")
        #expect(home.coffer(["read", "coffer://my%20stuff/db%20one/username"]).stdout == "bob smith\n")
        // A field with a '/' needs %2F.
        #expect(home.coffer(["read", "coffer://a/b/x%2Fy"]).stdout == "slashed\n")
        #expect(home.coffer(["read", "coffer://a/b?field=x%2Fy"]).stdout == "slashed\n")
    }

    @Test func ambiguityIsAnErrorAndFieldQueryResolvesIt() {
        let home = Self.home()
        let before = home.vaultBytes()
        let r = home.coffer(["read", "coffer://a/b/c"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("ambiguous") && r.stderr.contains("coffer://a/b?field=c"))
        #expect(home.coffer(["read", "coffer://a/b?field=c"]).stdout == "field-c\n")
        #expect(home.coffer(["read", "coffer://a/b/c?field=key"]).stdout == "item-abc\n")
        #expect(home.vaultBytes() == before)
    }

    @Test func readErrors() {
        let home = Self.home()
        var r = home.coffer(["read", "coffer://nope/x"])
        #expect(r.status == 66)
        #expect(r.stderr.contains("coffer://nope/x"))
        r = home.coffer(["read", "coffer://work/openai/missing"])
        #expect(r.status == 66)
        #expect(r.stderr.contains("has no field 'missing'") && !r.stderr.contains("sk-test-123"))
        for bad in ["coffer://", "coffer://a//b", "coffer://a/b/", "coffer://bad%2", "coffer://a#b", "http://x", "coffer://a?other=1"] {
            r = home.coffer(["read", bad])
            #expect(r.status == 65, "\(bad): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: malformed reference"), "\(bad): \(r)")
        }
    }

    @Test func readJSONMatchesSchema() {
        let home = Self.home()
        let r = home.coffer(["read", "--json", "coffer://my stuff/db one/username"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "read.schema.json")
        let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(obj?["item"] as? String == "my stuff/db one")
        #expect(obj?["field"] as? String == "username")
        #expect(obj?["value"] as? String == "bob smith")
        #expect(obj?["secret"] as? Bool == false)
    }

    @Test func expiredItemsWarnButStillResolve() {
        let home = Self.home()
        #expect(home.coffer(["add", "old/key", "--type", "api-key", "--secret", "key", "--expires", "2020-01-01"], stdin: "old-secret\n").status == 0)
        let r = home.coffer(["read", "coffer://old/key"])
        #expect(r.status == 0)
        #expect(r.stdout == "old-secret\n")
        #expect(r.stderr.contains("expired on 2020-01-01") && !r.stderr.contains("old-secret"))
    }

    // MARK: run

    @Test func runReplacesInheritedEnvAndFlagVariables() {
        let home = Self.home()
        var r = home.coffer(["run", "--"] + Self.printVar("K"), env: ["K": "coffer://work/openai"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "sk-test-123")
        r = home.coffer(["run", "--env", "P=coffer://my stuff/db one", "--"] + Self.printVar("P"))
        #expect(r.stdout == "pa ss'word", "\(r)")
        // Non-references pass through unchanged.
        r = home.coffer(["run", "--"] + Self.printVar("PLAIN"), env: ["PLAIN": "coffer:/not-a-ref"])
        #expect(r.stdout == "coffer:/not-a-ref")
    }

    @Test func runResolvesManyReferencesWithOneUnlock() {
        // The passphrase on fd 3 can be read only once: all references must
        // share one unlock.
        let home = Self.home()
        let r = home.coffer(
            ["run", "--env", "A=coffer://work/openai", "--env", "B=coffer://a/b?field=c", "--"]
                + ["/bin/sh", "-c", "printf '%s|%s|%s' \"$A\" \"$B\" \"$C\""],
            env: ["C": "coffer://my stuff/db one/username"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "sk-test-123|field-c|bob smith")
    }

    @Test func runEnvFile() throws {
        let home = Self.home()
        try """
        # refs
        export KEY=coffer://work/openai
        USER="coffer://my stuff/db one/username"
        LIT='kept $AS is'
        """.write(toFile: home.path("refs.env"), atomically: true, encoding: .utf8)
        let r = home.coffer(["run", "--env-file", "refs.env", "--env", "LIT=override", "--", "/bin/sh", "-c", "printf '%s|%s|%s' \"$KEY\" \"$USER\" \"$LIT\""])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "sk-test-123|bob smith|override")
        let missing = home.coffer(["run", "--env-file", "nope.env", "--", "true"])
        #expect(missing.status == 66)
        try "NOT A LINE\n".write(toFile: home.path("bad.env"), atomically: true, encoding: .utf8)
        let bad = home.coffer(["run", "--env-file", "bad.env", "--", "true"])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("bad.env:1"))
    }

    @Test func runPassesExitStatusAndSignalDeath() {
        let home = Self.home()
        #expect(home.coffer(["run", "--", "/bin/sh", "-c", "exit 42"]).status == 42)
        #expect(home.coffer(["run", "--", "/bin/sh", "-c", "exit 0"]).status == 0)
        #expect(home.coffer(["run", "--", "/bin/sh", "-c", "kill -TERM $$"]).status == 128 + SIGTERM)
        #expect(home.coffer(["run", "--", "no-such-command-xyz"]).status == 127)
        #expect(home.coffer(["run"]).status == 64)
    }

    @Test func runPassesStdinThrough() {
        let home = Self.home()
        let r = home.run(["run", "--", "/bin/cat"], stdin: "line one\nline two\n")
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "line one\nline two\n")
    }

    @Test func unresolvableReferenceStopsBeforeTheCommand() {
        let home = Self.home()
        let marker = home.path("started")
        let r = home.coffer(["run", "--env", "OK=coffer://work/openai", "--", "/bin/sh", "-c", "touch '\(marker)'"], env: ["BROKEN": "coffer://work/gone/key"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("BROKEN") && r.stderr.contains("coffer://work/gone/key"))
        #expect(!r.stderr.contains("sk-test-123"))
        #expect(!FileManager.default.fileExists(atPath: marker))
        let m = home.coffer(["run", "--", "/bin/sh", "-c", "touch '\(marker)'"], env: ["BAD": "coffer://x%zz"])
        #expect(m.status == 65)
        #expect(m.stderr.contains("BAD"))
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func signalIsForwardedToTheChild() {
        let home = Self.home()
        let ready = home.path("ready")
        let marker = home.path("got-term")
        let script = "trap 'echo term > \"\(marker)\"; exit 7' TERM; : > \"\(ready)\"; while :; do sleep 0.05; done"
        let running = home.startUnlocked(["run", "--", "/bin/sh", "-c", script], env: ["K": "coffer://work/openai"])
        #expect(home.waitForFile(ready), "child never started")
        running.send(SIGTERM)
        let r = running.wait()
        #expect(r.status == 7, "\(r)")
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "term\n")
    }

    @Test func otherSignalsAreForwardedToo() {
        let home = Self.home()
        let ready = home.path("ready")
        let marker = home.path("got")
        let script = "trap 'echo usr1 >> \"\(marker)\"' USR1; trap 'echo hup >> \"\(marker)\"; exit 3' HUP; : > \"\(ready)\"; while :; do sleep 0.05; done"
        let running = home.startUnlocked(["run", "--", "/bin/sh", "-c", script])
        #expect(home.waitForFile(ready))
        running.send(SIGUSR1)
        usleep(300_000)
        running.send(SIGHUP)
        let r = running.wait()
        #expect(r.status == 3, "\(r)")
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "usr1\nhup\n")
    }

    /// Ctrl-C on a terminal reaches the child once (from the terminal), not
    /// a second time through coffer. Runs coffer on a pseudo-terminal.
    @Test func terminalInterruptReachesTheChildOnce() throws {
        let home = Self.home()
        let marker = home.path("ints")
        let script = """
            import os, pty, sys, time, signal
            exe, fd3, marker = sys.argv[1], sys.argv[2], sys.argv[3]
            pid, fd = pty.fork()
            if pid == 0:
                child = "trap 'echo INT >> " + marker + "' INT; trap 'echo TERM >> " + marker + "; exit 9' TERM; echo ready; while :; do sleep 0.05; done"
                os.execv(exe, [exe, "run", "--passphrase-file", fd3, "--", "/bin/sh", "-c", child])
            buf = b""
            deadline = time.time() + 20
            while b"ready" not in buf and time.time() < deadline:
                try:
                    buf += os.read(fd, 100)
                except OSError:
                    print(buf); sys.exit(1)
            os.write(fd, b"\\x03")
            time.sleep(0.6)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        try (home.passphrase + "\n").write(toFile: home.path("pass"), atomically: true, encoding: .utf8)
        var env = home.environment
        env["K"] = "coffer://work/openai"
        let r = Spawn.run(
            "/usr/bin/python3", ["-c", script, CofferBinary.path, home.path("pass"), marker], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 9, "\(r)")
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "INT\nTERM\n")
    }

    @Test func maskConcealsSecretsEvenWhenSplitAcrossWrites() {
        let home = Self.home()
        let script = "printf 'A sk-te'; sleep 0.3; printf 'st-123 B\\n'; printf 'e: %s.\\n' \"$K\" >&2; printf 'user %s\\n' \"$U\""
        let r = home.coffer(["run", "--mask", "--", "/bin/sh", "-c", script], env: ["K": "coffer://work/openai", "U": "coffer://my stuff/db one/username"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "A <concealed> B\nuser <concealed>\n")
        #expect(r.stderr.contains("e: <concealed>."))
        #expect(!r.stdout.contains("sk-test-123") && !r.stderr.contains("sk-test-123"))
        // Without --mask the output is untouched.
        let plain = home.coffer(["run", "--", "/bin/sh", "-c", "printf %s \"$K\""], env: ["K": "coffer://work/openai"])
        #expect(plain.stdout == "sk-test-123")
        // A prefix of a secret that never completes is printed at the end.
        let prefix = home.coffer(["run", "--mask", "--", "/bin/sh", "-c", "printf 'x sk-te'"], env: ["K": "coffer://work/openai"])
        #expect(prefix.stdout == "x sk-te")
    }

    // MARK: inject

    @Test func injectRendersToStdoutAndToAPrivateFile() throws {
        let home = Self.home()
        let template = "key: {{ coffer://work/openai }}\nuser: {{coffer://my stuff/db one/username}}\nkeep: {{ .Other }}\n"
        let r = home.coffer(["inject"], stdin: template)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "key: sk-test-123\nuser: bob smith\nkeep: {{ .Other }}\n")

        try template.write(toFile: home.path("t.tpl"), atomically: true, encoding: .utf8)
        // An existing, world-readable output is replaced by a 0600 file.
        try "old\n".write(toFile: home.path("out.txt"), atomically: true, encoding: .utf8)
        chmod(home.path("out.txt"), 0o644)
        let w = home.coffer(["inject", "-i", "t.tpl", "-o", "out.txt"])
        #expect(w.status == 0, "\(w)")
        #expect(w.stdout.isEmpty)
        #expect(home.mode(home.path("out.txt")) == 0o600)
        #expect((try? String(contentsOfFile: home.path("out.txt"), encoding: .utf8)) == "key: sk-test-123\nuser: bob smith\nkeep: {{ .Other }}\n")
        let n = home.coffer(["inject", "-i", "t.tpl", "-o", "new.txt"])
        #expect(n.status == 0)
        #expect(home.mode(home.path("new.txt")) == 0o600)
        // No temporary files left behind.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: home.root.path).filter { $0.contains(".coffer-") }
        #expect(leftovers.isEmpty)
    }

    @Test func injectWithAMissingReferenceWritesNothing() throws {
        let home = Self.home()
        try "a: {{ coffer://work/openai }}\nb: {{ coffer://work/missing }}\n".write(toFile: home.path("t.tpl"), atomically: true, encoding: .utf8)
        var r = home.coffer(["inject", "-i", "t.tpl", "-o", "out.txt"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("coffer://work/missing"))
        #expect(!FileManager.default.fileExists(atPath: home.path("out.txt")))
        // An existing output stays as it was.
        try "old\n".write(toFile: home.path("out.txt"), atomically: true, encoding: .utf8)
        r = home.coffer(["inject", "-i", "t.tpl", "-o", "out.txt"])
        #expect(r.status == 66)
        #expect((try? String(contentsOfFile: home.path("out.txt"), encoding: .utf8)) == "old\n")
        // To stdout: nothing printed either.
        r = home.coffer(["inject", "-i", "t.tpl"])
        #expect(r.status == 66)
        #expect(r.stdout.isEmpty)
        // Malformed and unterminated placeholders.
        try "x {{ coffer://a b%z }}\n".write(toFile: home.path("m.tpl"), atomically: true, encoding: .utf8)
        r = home.coffer(["inject", "-i", "m.tpl", "-o", "m.txt"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("m.tpl:1"))
        try "ok\nx {{ coffer://work/openai\n".write(toFile: home.path("u.tpl"), atomically: true, encoding: .utf8)
        r = home.coffer(["inject", "-i", "u.tpl", "-o", "m.txt"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("u.tpl:2"))
        #expect(!FileManager.default.fileExists(atPath: home.path("m.txt")))
        #expect(home.coffer(["inject", "-i", "nope.tpl"]).status == 66)
        // Output into a folder that does not exist.
        try "plain\n".write(toFile: home.path("p.tpl"), atomically: true, encoding: .utf8)
        #expect(home.coffer(["inject", "-i", "p.tpl", "-o", "no/such/dir/x"]).status == 73)
    }

    // MARK: env

    @Test func envNamingFormatsAndOverrides() {
        let home = Self.home()
        var r = home.coffer(["env", "work/openai", "my stuff/db one"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "OPENAI_KEY=sk-test-123\nDB_ONE_USERNAME='bob smith'\nDB_ONE_PASSWORD=\"pa ss'word\"\n")
        r = home.coffer(["env", "--format", "shell", "my stuff/db one"])
        #expect(r.stdout == "export DB_ONE_USERNAME='bob smith'\nexport DB_ONE_PASSWORD='pa ss'\\''word'\n")
        // The shell format survives eval.
        let sh = Spawn.run(
            "/bin/sh", ["-c", r.stdout + "printf '%s|%s' \"$DB_ONE_USERNAME\" \"$DB_ONE_PASSWORD\""], stdin: nil, fd3: nil, environment: [:], workDir: "/")
        #expect(sh.stdout == "bob smith|pa ss'word")

        #expect(home.coffer(["edit", "work/openai", "--env-var", "key=OPENAI_API_KEY"]).status == 0)
        #expect(home.coffer(["edit", "my stuff/db one", "--env-var", "username=-", "--env-var", "password=PGPASSWORD"]).status == 0)
        r = home.coffer(["env", "work/openai", "my stuff/db one"])
        #expect(r.stdout == "OPENAI_API_KEY=sk-test-123\nPGPASSWORD=\"pa ss'word\"\n", "\(r)")
        #expect(home.coffer(["edit", "work/openai", "--no-env-var", "key"]).status == 0)
        #expect(home.coffer(["env", "work/openai"]).stdout == "OPENAI_KEY=sk-test-123\n")
        let before = home.vaultBytes()
        let bad = home.coffer(["edit", "work/openai", "--env-var", "key=1BAD"])
        #expect(bad.status == 64)
        #expect(home.vaultBytes() == before)
    }

    @Test func envWrittenAsDotenvReadsBackInRun() throws {
        let home = Self.home()
        let r = home.coffer(["env", "my stuff/db one"])
        try r.stdout.write(toFile: home.path("out.env"), atomically: true, encoding: .utf8)
        let back = home.run(["run", "--env-file", "out.env", "--", "/bin/sh", "-c", "printf '%s|%s' \"$DB_ONE_USERNAME\" \"$DB_ONE_PASSWORD\""])
        #expect(back.stdout == "bob smith|pa ss'word", "\(back)")
    }

    @Test func envJSONMatchesSchemaAndCollisionsFail() {
        let home = Self.home()
        var r = home.coffer(["env", "--format", "json", "work/openai", "a/b"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "env.schema.json")
        let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String]
        #expect(obj == ["OPENAI_KEY": "sk-test-123", "B_C": "field-c", "B_X_Y": "slashed"])
        // Everything: a/b/c's key (C_KEY) and a/b's c field (B_C) do not clash.
        r = home.coffer(["env", "--format", "json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "env.schema.json")
        // Two items whose last segment and field agree.
        #expect(home.coffer(["add", "personal/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-other\n").status == 0)
        let before = home.vaultBytes()
        r = home.coffer(["env"])
        #expect(r.status == 65)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("OPENAI_KEY") && r.stderr.contains("--env-var"))
        #expect(home.vaultBytes() == before)
        #expect(home.coffer(["env", "nope"]).status == 66)
    }
}
