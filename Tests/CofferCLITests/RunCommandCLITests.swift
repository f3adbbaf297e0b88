import CofferTestSupport
import Foundation
import Testing

/// What `coffer run`, `coffer env` and `coffer inject` hand the command or
/// the file: values from dotenv files and references, never the passphrase,
/// the session or coffer's own descriptors, signal dispositions and umask.
@Suite("coffer run, env and inject: what the command receives, black-box")
struct RunCommandCLITests {
    /// A dotenv file with CRLF line ends is read line by line.
    @Test func runReadsACRLFEnvFile() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-test-1").status == 0)
        try Data("A=1\r\nB=coffer://work/openai\r\n".utf8).write(to: URL(fileURLWithPath: home.path("e")))
        let r = home.coffer(["run", "--env-file", "e", "--", "/bin/sh", "-c", "printf '[%s][%s]' \"$A\" \"$B\""])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "[1][sk-test-1]")
    }

    /// `nohup coffer run -- cmd` (or any parent ignoring SIGHUP) keeps
    /// SIGHUP ignored in cmd; a signal not ignored still has its default
    /// action.
    @Test func runLeavesIgnoredSignalsIgnored() {
        let home = TestHome()
        let script = "kill -HUP $$; echo alive"
        let ignored = Spawn.run(
            "/bin/sh", ["-c", "trap '' HUP; exec \"$0\" run -- /bin/sh -c '\(script)'", CofferBinary.path],
            stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(ignored.status == 0, "\(ignored)")
        #expect(ignored.stdout == "alive\n")

        let notIgnored = Spawn.run(
            "/bin/sh", ["-c", "exec \"$0\" run -- /bin/sh -c '\(script)'", CofferBinary.path],
            stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(notIgnored.status == 128 + SIGHUP, "\(notIgnored)")
        #expect(notIgnored.stdout == "")
    }

    /// `coffer inject -o LINK` writes the file LINK points to and keeps the
    /// link; a FIFO is refused with exit 73.
    @Test func injectWritesThroughASymlink() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-test-2").status == 0)
        try "key={{ coffer://work/openai }}\n".write(toFile: home.path("t.tpl"), atomically: true, encoding: .utf8)
        try "old\n".write(toFile: home.path("real.env"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: home.path("app.env"), withDestinationPath: "real.env")
        let r = home.coffer(["inject", "-i", "t.tpl", "-o", "app.env"])
        #expect(r.status == 0, "\(r)")
        #expect(try String(contentsOfFile: home.path("real.env"), encoding: .utf8) == "key=sk-test-2\n")
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: home.path("app.env"))
        #expect(link == "real.env")

        // A FIFO is written as a stream (issue 15), never replaced.
        #expect(mkfifo(home.path("fifo"), 0o600) == 0)
        let streamed = home.shell("cat fifo > got.txt & \"$COFFER\" inject -i t.tpl -o fifo --passphrase-file \"$PW\"; s=$?; wait; exit $s", timeout: 30)
        #expect(streamed.status == 0, "\(streamed)")
        #expect(try String(contentsOfFile: home.path("got.txt"), encoding: .utf8) == "key=sk-test-2\n")
        #expect(home.fileType(home.path("fifo")) == S_IFIFO)
        // A folder is refused.
        try FileManager.default.createDirectory(atPath: home.path("folder"), withIntermediateDirectories: true)
        let refused = home.coffer(["inject", "-i", "t.tpl", "-o", "folder"])
        #expect(refused.status == 73, "\(refused)")
        #expect(refused.stderr.contains("is a folder"), "\(refused.stderr)")
    }

    /// `coffer run` must not hand the passphrase or the session token to
    /// the command: that would give it the whole vault.
    @Test func runDoesNotLeakThePassphraseOrSession() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        let r = home.run(
            ["run", "--", "/bin/sh", "-c", "env | grep ^COFFER_ || true"],
            env: ["COFFER_PASSPHRASE": home.passphrase, "K": "coffer://k"])
        #expect(r.status == 0, "\(r)")
        #expect(!r.stdout.contains("COFFER_PASSPHRASE"), "\(r.stdout)")
        let kept = home.run(
            ["run", "--keep-session", "--", "/bin/sh", "-c", "env | grep ^COFFER_PASSPHRASE= | wc -l"],
            env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(kept.out.trimmingCharacters(in: .whitespaces) == "1")
    }

    /// The passphrase descriptor is not inherited by `coffer run`'s command.
    @Test func passphraseDescriptorIsNotInherited() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        let r = home.run(
            ["run", "--passphrase-fd", "3", "--", "/bin/sh", "-c", "cat <&3 2>/dev/null; echo rc=$?"],
            fd3: home.passphrase + "\n", env: ["K": "coffer://k"])
        #expect(r.status == 0, "\(r)")
        #expect(!r.stdout.contains(home.passphrase), "\(r.stdout)")
    }

    /// `coffer run` gives the command the user's umask, not coffer's 077.
    @Test func runRestoresTheUmask() {
        let home = TestHome()
        let r = Spawn.run(
            "/bin/sh", ["-c", "umask 022; exec \"$0\" run -- /bin/sh -c umask", CofferBinary.path], stdin: nil, fd3: nil,
            environment: home.environment, workDir: home.root.path)
        #expect(r.out == "0022", "\(r)")
    }

    /// Naming one item twice is not a variable collision; a stored
    /// override that is not a variable name is refused.
    @Test func envListsAnItemOnceAndRefusesBadOverrides() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-1").status == 0)
        let r = home.unlocked(["env", "work/openai", "work/openai"])
        #expect(r.status == 0, "\(r)")
        let bad = home.unlocked(["edit", "work/openai", "--env-var", "key=A=1; touch x"])
        #expect(bad.status == 64, "\(bad)")
    }
}

@Suite("coffer run and references: variables and masking, black-box")
struct RunMaskingCLITests {
    static let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"

    @Test func referencesExpandEnvironmentVariables() {
        let home = TestHome()
        home.initVault()
        #expect(
            home.unlocked(["add", "db/prod/password", "--type", "login", "--field", "username=app", "--secret", "password"], stdin: "prod-secret").status == 0)
        let r = home.unlocked(["read", "coffer://db/${APP_ENV}/password"], env: ["APP_ENV": "prod"])
        #expect(r.status == 0 && r.out == "prod-secret", "\(r)")
        let unset = home.unlocked(["read", "coffer://db/${APP_ENV}/password"])
        #expect(unset.status == 64, "\(unset)")
        #expect(unset.stderr.contains("the variable APP_ENV is not set"), "\(unset)")
        let run = home.run(
            ["run", "--passphrase-fd", "3", "--env", "PW=coffer://db/${APP_ENV}/password", "--", "printenv", "PW"], fd3: home.passphrase,
            env: ["APP_ENV": "prod"])
        #expect(run.status == 0 && run.out == "prod-secret", "\(run)")
        let bad = home.unlocked(["read", "coffer://db/${APP-ENV}/password"], env: ["APP_ENV": "prod"])
        #expect(bad.status == 65, "\(bad)")
    }

    /// `script` gives the command a pseudo-terminal as stdout and stderr.
    func inTerminal(_ home: TestHome, _ args: [String]) -> CLIResult {
        let quoted = ([CofferBinary.path] + args).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        return TestHome.spawn(home, "/usr/bin/script", ["-qec", quoted, "/dev/null"], env: ["COFFER_PASSPHRASE": home.passphrase])
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func runMasksOnATerminalByDefault() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "svc", "--type", "api-key"], stdin: Self.key).status == 0)
        let masked = inTerminal(home, ["run", "--env", "K=coffer://svc", "--", "printenv", "K"])
        #expect(masked.status == 0, "\(masked)")
        #expect(masked.stdout.contains("<concealed>") && !masked.stdout.contains(Self.key), "\(masked)")
        let shown = inTerminal(home, ["run", "--no-mask", "--env", "K=coffer://svc", "--", "printenv", "K"])
        #expect(shown.stdout.contains(Self.key), "\(shown)")
        // Not a terminal: the value passes through unless --mask.
        let piped = home.run(["run", "--passphrase-fd", "3", "--env", "K=coffer://svc", "--", "printenv", "K"], fd3: home.passphrase)
        #expect(piped.out == Self.key, "\(piped)")
        let forced = home.run(["run", "--passphrase-fd", "3", "--mask", "--env", "K=coffer://svc", "--", "printenv", "K"], fd3: home.passphrase)
        #expect(forced.out == "<concealed>", "\(forced)")
    }
}
