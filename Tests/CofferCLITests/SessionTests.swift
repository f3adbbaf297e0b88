import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Shell sessions, lock, status and passwd, black-box through the built
/// binary (docs/sessions.md).
@Suite("Sessions")
struct SessionTests {
    // MARK: Helpers

    /// A sandbox with a vault holding one item `work/openai` = `sk-test-123`.
    static func homeWithItem() -> TestHome {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-test-123\n")
        precondition(r.status == 0, "add failed: \(r)")
        return home
    }

    /// Runs `coffer unlock` with the passphrase on fd 3 and returns the token.
    static func unlock(_ home: TestHome, _ extra: [String] = []) throws -> String {
        let r = home.unlocked(["unlock", "--shell", "sh"] + extra)
        #expect(r.status == 0, "\(r)")
        return try token(fromShellLine: r.out)
    }

    static func token(fromShellLine line: String) throws -> String {
        let prefix = "export COFFER_SESSION='"
        guard line.hasPrefix(prefix), line.hasSuffix("';") else {
            throw SessionTestFailure("not an export line: \(line)")
        }
        return String(line.dropFirst(prefix.count).dropLast(2))
    }

    static func sessionFile(_ home: TestHome, token: String) -> String {
        let id = token.split(separator: ".")[1]
        return home.environment["XDG_RUNTIME_DIR"]! + "/coffer/\(id).session"
    }

    /// `coffer get work/openai` with only the session (no passphrase source).
    static func get(_ home: TestHome, token: String, _ extra: [String] = []) -> CLIResult {
        home.run(["get", "work/openai"] + extra, env: ["COFFER_SESSION": token])
    }

    /// The one-line session error every unusable session gives.
    static func expectSessionRefused(_ r: CLIResult, mentioning: String, token: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 77, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stdout.isEmpty, sourceLocation: sourceLocation)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "expected one line: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(mentioning), "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains("run eval \"$(coffer unlock"), "\(r.stderr)", sourceLocation: sourceLocation)
        let secret = String(token.split(separator: ".").last ?? "")
        #expect(!r.stderr.contains(secret), "the token leaked into the error", sourceLocation: sourceLocation)
    }

    static func writePrivate(_ path: String, _ text: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
    }

    static func jsonObject(_ text: String) throws -> [String: Any] {
        guard let o = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw SessionTestFailure("not a JSON object: \(text)")
        }
        return o
    }

    // MARK: Unlock, use, lock

    @Test("unlock, get without passphrase, lock, get fails with 77")
    func unlockGetLock() throws {
        let home = Self.homeWithItem()
        let token = try Self.unlock(home)
        let file = Self.sessionFile(home, token: token)
        var st = stat()
        #expect(stat(file, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(stat((file as NSString).deletingLastPathComponent, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)

        let got = Self.get(home, token: token)
        #expect(got.status == 0, "\(got)")
        #expect(got.out == "sk-test-123")

        // A write works with the session too.
        let add = home.run(["add", "work/other", "--type", "api-key"], stdin: "sk-other\n", env: ["COFFER_SESSION": token])
        #expect(add.status == 0, "\(add)")

        let lock = home.run(["lock"], env: ["COFFER_SESSION": token])
        #expect(lock.status == 0, "\(lock)")
        #expect(!FileManager.default.fileExists(atPath: file))
        Self.expectSessionRefused(Self.get(home, token: token), mentioning: "session ended", token: token)
        // Without a session and without a terminal: locked, 77.
        #expect(home.run(["get", "work/openai"]).status == 77)
    }

    @Test("the session file alone is useless; the token is not in argv-visible output")
    func fileFormat() throws {
        let home = Self.homeWithItem()
        let r = home.unlocked(["unlock", "--shell", "json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "unlock.schema.json")
        let o = try Self.jsonObject(r.stdout)
        let token = try #require(o["token"] as? String)
        let secret = String(token.split(separator: ".")[2])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.sessionFile(home, token: token)))
        // Neither the token secret nor anything printable of it is stored.
        #expect(bytes.range(of: Data(secret.utf8)) == nil)
        #expect(!r.stderr.contains(secret))
        let fish = home.unlocked(["unlock", "--shell", "fish"])
        #expect(fish.out.hasPrefix("set -gx COFFER_SESSION 'cs1."), "\(fish)")
    }

    @Test("idle timeout is refreshed on use and then expires")
    func idleExpiry() throws {
        let home = Self.homeWithItem()
        let token = try Self.unlock(home, ["--timeout", "3s"])
        for _ in 0..<3 {
            usleep(1_200_000)
            // Each use within 3 s keeps the session alive past its first 3 s
            // (the margin absorbs a slow, loaded machine).
            let r = Self.get(home, token: token)
            #expect(r.status == 0, "\(r)")
        }
        usleep(3_300_000)
        Self.expectSessionRefused(Self.get(home, token: token), mentioning: "session expired", token: token)
        #expect(!FileManager.default.fileExists(atPath: Self.sessionFile(home, token: token)), "an expired session's file is wiped")
    }

    @Test("the absolute lifetime ends a session in use")
    func maxLifetime() throws {
        let home = Self.homeWithItem()
        let token = try Self.unlock(home, ["--timeout", "1h", "--max-lifetime", "3s"])
        #expect(Self.get(home, token: token).status == 0)
        usleep(3_200_000)
        Self.expectSessionRefused(Self.get(home, token: token), mentioning: "maximum lifetime", token: token)
    }

    @Test("a tampered session file or token is refused with 77")
    func tampered() throws {
        let home = Self.homeWithItem()
        let before = home.vaultBytes()
        // Flip one byte of the encrypted key, of the header (idle timeout), and of the token.
        for offset in [-5, 50] {
            let token = try Self.unlock(home)
            let path = Self.sessionFile(home, token: token)
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let i = offset < 0 ? bytes.count + offset : offset
            bytes[i] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            Self.expectSessionRefused(Self.get(home, token: token), mentioning: "session invalid", token: token)
        }
        let token = try Self.unlock(home)
        var chars = Array(token)
        chars[chars.count - 3] = chars[chars.count - 3] == "A" ? "B" : "A"
        let forged = String(chars)
        Self.expectSessionRefused(Self.get(home, token: forged), mentioning: "session invalid", token: forged)
        Self.expectSessionRefused(Self.get(home, token: "cs1.nothex.abc"), mentioning: "not hold a Coffer session token", token: "x")
        // A session file left readable by others is refused.
        let path = Self.sessionFile(home, token: token)
        chmod(path, 0o644)
        Self.expectSessionRefused(Self.get(home, token: token), mentioning: "not a private file", token: token)
        chmod(path, 0o600)
        #expect(Self.get(home, token: token).status == 0)
        // So is a session folder open to others.
        let dir = (path as NSString).deletingLastPathComponent
        chmod(dir, 0o755)
        let r = Self.get(home, token: token)
        #expect(r.status == 77 && r.stderr.contains("not a private folder"), "\(r)")
        chmod(dir, 0o700)
        #expect(home.vaultBytes() == before, "refused sessions never change the vault")
    }

    @Test("a session of another vault is refused")
    func foreignVault() throws {
        let home = Self.homeWithItem()
        let other = home.path("other.coffer")
        #expect(home.unlocked(["init", "--vault", other] + FastKDF.arguments).status == 0)
        let token = try Self.unlock(home)
        let r = home.run(["get", "work/openai", "--vault", other], env: ["COFFER_SESSION": token])
        Self.expectSessionRefused(r, mentioning: "session belongs to another vault", token: token)
        // The session still works for its own vault.
        #expect(Self.get(home, token: token).status == 0)
    }

    @Test("several sessions coexist; lock ends one, lock --all ends every one")
    func coexisting() throws {
        let home = Self.homeWithItem()
        let a = try Self.unlock(home)
        let b = try Self.unlock(home)
        let c = try Self.unlock(home)
        #expect(a != b)
        for t in [a, b, c] { #expect(Self.get(home, token: t).out == "sk-test-123") }
        #expect(home.run(["lock"], env: ["COFFER_SESSION": a]).status == 0)
        Self.expectSessionRefused(Self.get(home, token: a), mentioning: "session ended", token: a)
        #expect(Self.get(home, token: b).status == 0)
        #expect(Self.get(home, token: c).status == 0)
        // Sessions of another vault survive lock --all.
        let other = home.path("other.coffer")
        #expect(home.unlocked(["init", "--vault", other] + FastKDF.arguments).status == 0)
        let o = try Self.token(fromShellLine: home.unlocked(["unlock", "--shell", "sh", "--vault", other]).out)
        let all = home.run(["lock", "--all"])
        #expect(all.status == 0 && all.stderr.contains("ended 2 sessions"), "\(all)")
        Self.expectSessionRefused(Self.get(home, token: b), mentioning: "session ended", token: b)
        Self.expectSessionRefused(Self.get(home, token: c), mentioning: "session ended", token: c)
        #expect(home.run(["ls", "--vault", other], env: ["COFFER_SESSION": o]).status == 0)
        // lock with no session is harmless.
        #expect(home.run(["lock"]).status == 0)
    }

    @Test("without XDG_RUNTIME_DIR, sessions live in a private per-user folder under TMPDIR")
    func fallbackFolder() throws {
        let home = Self.homeWithItem()
        home.environment.removeValue(forKey: "XDG_RUNTIME_DIR")
        let tmp = home.path("tmp")
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        home.environment["TMPDIR"] = tmp
        let token = try Self.unlock(home)
        let folder = tmp + "/coffer-\(geteuid())"
        let id = String(token.split(separator: ".")[1])
        #expect(FileManager.default.fileExists(atPath: folder + "/\(id).session"))
        var st = stat()
        #expect(lstat(folder, &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(Self.get(home, token: token).out == "sk-test-123")
        // A folder others can enter is refused, for unlock as for use.
        chmod(folder, 0o711)
        let r = Self.get(home, token: token)
        #expect(r.status == 77 && r.stderr.contains("not a private folder"), "\(r)")
        let u = home.unlocked(["unlock"])
        #expect(u.status == 77 && u.stdout.isEmpty, "\(u)")
        // A symbolic link in its place is refused too.
        chmod(folder, 0o700)
        try FileManager.default.moveItem(atPath: folder, toPath: tmp + "/real")
        try FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: tmp + "/real")
        let l = Self.get(home, token: token)
        #expect(l.status == 77 && l.stderr.contains("not a private folder"), "\(l)")
    }

    @Test("the fast path of `get NAME` behaves like the parsed command")
    func fastPathMatchesParsedGet() throws {
        let home = Self.homeWithItem()
        let token = try Self.unlock(home)
        let env = ["COFFER_SESSION": token]
        // `--vault PATH` given twice forces argument-parser (the fast path
        // takes it once, FastPath.withoutVaultOption); the bare form takes
        // the fast path.
        for name in ["work/openai", "nope", "id:zz", "/bad"] {
            let fast = home.run(["get", name], env: env)
            let parsed = home.run(["get", "--vault", home.vaultPath, "--vault", home.vaultPath, name], env: env)
            #expect(fast.status == parsed.status && fast.stdout == parsed.stdout && fast.stderr == parsed.stderr, "\(name):\n\(fast)\n\(parsed)")
        }
        #expect(home.run(["get", "--help"], env: env).stdout.contains("USAGE"))
        home.run(["lock"], env: env)
        Self.expectSessionRefused(home.run(["get", "work/openai"], env: env), mentioning: "session ended", token: token)
    }

    @Test("`--vault PATH` on the fast path: another vault's session (77), no vault there (66), one line each, as argument-parser's path says; nothing changed")
    func fastPathWithTheVaultOption() throws {
        let home = Self.homeWithItem()
        let token = try Self.unlock(home)
        let env = ["COFFER_SESSION": token]
        #expect(home.run(["--vault", home.vaultPath, "get", "work/openai"], env: env).out == "sk-test-123")
        #expect(home.run(["get", "work/openai", "--vault", home.vaultPath], env: env).out == "sk-test-123")
        // Another vault, with the same passphrase.
        let other = home.path("other.coffer")
        #expect(home.unlocked(["init", "--vault", other]).status == 0)
        let before = (home.vaultBytes(), home.vaultBytes(other))
        for (args, status, says) in [
            (["get", "--vault", other, "work/openai"], Int32(77), "session belongs to another vault"),
            (["add", "--vault", other, "work/new", "--type", "api-key"], 77, "session belongs to another vault"),
            (["ls", "--vault", other], 77, "session belongs to another vault"),
            (["get", "--vault", home.path("missing.coffer"), "work/openai"], 66, "no vault at"),
        ] as [([String], Int32, String)] {
            let fast = home.run(args, stdin: "sk-x\n", env: env)
            let vaultArgs = Array(args[1...2])
            let parsed = home.run([args[0]] + vaultArgs + Array(args[1...]), stdin: "sk-x\n", env: env)
            #expect(fast.status == status && fast.stderr.contains(says), "\(args): \(fast)")
            #expect(fast.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(fast)")
            #expect(fast.status == parsed.status && fast.stdout == parsed.stdout && fast.stderr == parsed.stderr, "\(args):\n\(fast)\n\(parsed)")
        }
        #expect(home.vaultBytes() == before.0 && home.vaultBytes(other) == before.1)
        #expect(!FileManager.default.fileExists(atPath: home.path("missing.coffer")))
    }

    // MARK: Status

    @Test("status needs no passphrase and its JSON follows the schema")
    func status() throws {
        let home = Self.homeWithItem()
        let locked = home.run(["status", "--json"])
        #expect(locked.status == 0, "\(locked)")
        SchemaValidation.expectValid(locked.stdout, schema: "status.schema.json")
        var o = try Self.jsonObject(locked.stdout)
        #expect(o["locked"] as? Bool == true)
        #expect(o["itemCount"] as? Int == 1)
        #expect((o["kdf"] as? [String: Any])?["memoryKiB"] as? Int == 8192)

        let token = try Self.unlock(home, ["--timeout", "10m"])
        let unlocked = home.run(["status", "--json"], env: ["COFFER_SESSION": token])
        SchemaValidation.expectValid(unlocked.stdout, schema: "status.schema.json")
        o = try Self.jsonObject(unlocked.stdout)
        #expect(o["locked"] as? Bool == false)
        #expect((o["session"] as? [String: Any])?["idleTimeoutSeconds"] as? Int == 600)
        #expect(o["activeSessions"] as? Int == 1)

        home.run(["lock"], env: ["COFFER_SESSION": token])
        let after = home.run(["status", "--json"], env: ["COFFER_SESSION": token])
        SchemaValidation.expectValid(after.stdout, schema: "status.schema.json")
        o = try Self.jsonObject(after.stdout)
        #expect(o["locked"] as? Bool == true)
        #expect((o["lockedReason"] as? String)?.contains("session ended") == true)

        let text = home.run(["status"], env: ["COFFER_SESSION": token])
        #expect(text.status == 0 && text.stdout.contains("locked: session ended"), "\(text)")
    }

    // MARK: Durations and the config file

    @Test("the default timeout comes from the config file; bad durations are usage errors")
    func configAndDurations() throws {
        let home = Self.homeWithItem()
        let configDir = home.environment["XDG_CONFIG_HOME"]! + "/coffer"
        try FileManager.default.createDirectory(atPath: configDir, withIntermediateDirectories: true)
        Self.writePrivate(configDir + "/config", "# sessions\nsession.timeout = 7m\nsession.max-lifetime = 2h\nother.key = ignored\n")
        let token = try Self.unlock(home)
        var o = try Self.jsonObject(home.run(["status", "--json"], env: ["COFFER_SESSION": token]).stdout)
        #expect((o["session"] as? [String: Any])?["idleTimeoutSeconds"] as? Int == 420)
        // The command line wins over the config file.
        let t2 = try Self.unlock(home, ["--timeout", "1h30m"])
        o = try Self.jsonObject(home.run(["status", "--json"], env: ["COFFER_SESSION": t2]).stdout)
        #expect((o["session"] as? [String: Any])?["idleTimeoutSeconds"] as? Int == 5400)

        for bad in ["15", "abc", "0s", "31d", "-5m"] {
            let r = home.unlocked(["unlock", "--timeout", bad])
            #expect(r.status == 64, "--timeout \(bad): \(r)")
            #expect(r.stdout.isEmpty)
        }
        Self.writePrivate(configDir + "/config", "session.timeout = soon\n")
        let r = home.unlocked(["unlock"])
        #expect(r.status == 65 && r.stderr.contains("config:1"), "\(r)")
    }

    // MARK: passwd

    @Test("passwd: the old passphrase fails, the new one works, sessions survive")
    func passwd() throws {
        let home = Self.homeWithItem()
        let session = try Self.unlock(home)
        let oldFile = home.path("old-pass")
        let newFile = home.path("new-pass")
        Self.writePrivate(oldFile, home.passphrase + "\n")
        Self.writePrivate(newFile, "a brand new passphrase\n")

        let wrong = home.run(["passwd", "--passphrase-file", newFile, "--new-passphrase-file", oldFile])
        #expect(wrong.status == 77, "\(wrong)")

        let r = home.run(["passwd", "--passphrase-file", oldFile, "--new-passphrase-file", newFile, "--kdf-memory", "16M"])
        #expect(r.status == 0, "\(r)")
        let old = home.run(["get", "work/openai", "--passphrase-file", oldFile])
        #expect(old.status == 77, "\(old)")
        let new = home.run(["get", "work/openai", "--passphrase-file", newFile])
        #expect(new.status == 0 && new.out == "sk-test-123", "\(new)")
        #expect(Self.get(home, token: session).out == "sk-test-123", "sessions keep working after passwd")
        let o = try Self.jsonObject(home.run(["status", "--json"]).stdout)
        #expect((o["kdf"] as? [String: Any])?["memoryKiB"] as? Int == 16384)
        #expect((o["kdf"] as? [String: Any])?["iterations"] as? Int == 1, "KDF parameters not given stay")

        // No terminal and no new-passphrase source: a usage error, nothing changed.
        let before = home.vaultBytes()
        let none = home.run(["passwd", "--passphrase-file", newFile])
        #expect(none.status == 64, "\(none)")
        let same = home.run(["passwd", "--passphrase-file", newFile, "--new-passphrase-file", newFile])
        #expect(same.status == 64, "\(same)")
        #expect(home.vaultBytes() == before)
    }

    /// Starts `coffer` and SIGKILLs it after `delay` seconds (or when it
    /// prints `marker` on stderr).
    static func runAndKill(_ home: TestHome, _ args: [String], env: [String: String], after delay: Double) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CofferBinary.path)
        p.arguments = args
        var e = home.environment
        for (k, v) in env { e[k] = v }
        p.environment = e
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        usleep(UInt32(delay * 1_000_000))
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    @Test("passwd killed mid-way leaves the old or the new passphrase working")
    func passwdInterrupted() throws {
        let home = Self.homeWithItem()
        let a = home.path("pass-a")
        let b = home.path("pass-b")
        Self.writePrivate(a, home.passphrase + "\n")
        Self.writePrivate(b, "the second passphrase\n")
        func works(_ file: String) -> Bool { home.run(["get", "work/openai", "--passphrase-file", file]).status == 0 }

        // Killed between key derivation and commit (test hook): the old one works.
        try Self.runAndKill(
            home, ["passwd", "--passphrase-file", a, "--new-passphrase-file", b],
            env: ["COFFER_TEST_PAUSE_BEFORE_COMMIT_MS": "3000"], after: 1.0)
        #expect(works(a) && !works(b))

        // Killed at random times: always exactly one works.
        var current = a
        var next = b
        var changed = 0
        for i in 0..<12 {
            let delay = Double(i % 6) * 0.012 + Double.random(in: 0..<0.01)
            try Self.runAndKill(home, ["passwd", "--passphrase-file", current, "--new-passphrase-file", next], env: [:], after: delay)
            let oldWorks = works(current)
            let newWorks = works(next)
            #expect(oldWorks != newWorks, "after a kill at \(delay)s: old \(oldWorks), new \(newWorks)")
            if newWorks {
                swap(&current, &next)
                changed += 1
            }
        }
        // Whatever happened, the vault still opens and its items are intact.
        let final = home.run(["get", "work/openai", "--passphrase-file", current])
        #expect(final.out == "sk-test-123", "\(final)")
        _ = changed
    }

    // MARK: The terminal prompt

    static let python = "/usr/bin/python3"
    static var ptyAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: python)
            && Spawn.run(python, ["-c", "import pty, os"], stdin: nil, fd3: nil, environment: [:], workDir: "/").status == 0
    }

    @Test(
        "unlock asks on the terminal without echoing the passphrase",
        .enabled(if: SessionTests.ptyAvailable, "needs /usr/bin/python3 with the pty module to drive a pseudo-terminal"))
    func noEchoPrompt() throws {
        let home = Self.homeWithItem()
        let outFile = home.path("unlock.out")
        // A pseudo-terminal becomes coffer's controlling terminal; stdout goes
        // to a file as under eval "$(...)". Everything the terminal shows is
        // captured and checked for the passphrase.
        let driver = """
            import os, pty, sys, time
            exe, out, secret = sys.argv[1], sys.argv[2], sys.argv[3]
            pid, fd = pty.fork()
            if pid == 0:
                o = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(o, 1)
                os.execv(exe, [exe, "unlock", "--shell", "sh"])
            seen = b""
            deadline = time.time() + 30
            while b"Passphrase:" not in seen and time.time() < deadline:
                seen += os.read(fd, 1024)
            time.sleep(0.2)
            os.write(fd, secret.encode() + b"\\n")
            while True:
                try:
                    chunk = os.read(fd, 1024)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(seen.decode("utf-8", "replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        var env = home.environment
        env.removeValue(forKey: "COFFER_PASSPHRASE")
        let r = Spawn.run(
            Self.python, ["-c", driver, CofferBinary.path, outFile, home.passphrase], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("Passphrase:"), "the prompt appears on the terminal: \(r.stdout)")
        #expect(!r.stdout.contains(home.passphrase), "the passphrase was echoed: \(r.stdout)")
        let line = try String(contentsOfFile: outFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        let token = try Self.token(fromShellLine: line)
        #expect(!r.stdout.contains(String(token.split(separator: ".")[2])), "the token is not shown on the terminal")
        #expect(Self.get(home, token: token).out == "sk-test-123")
    }
}

struct SessionTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
