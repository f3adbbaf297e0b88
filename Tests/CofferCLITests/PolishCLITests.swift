import CofferTestSupport
import Foundation
import Testing

/// Issue 15's first-hour findings: init, --json everywhere, suggestions.
@Suite("first-hour polish, black-box")
struct PolishCLITests {
    @Test func initRefusesAnExistingVaultBeforeAskingAnything() {
        let home = TestHome()
        home.initVault()
        let vault = home.vaultPath
        let before = home.vaultBytes()
        // No passphrase source at all and no terminal: still 73, not 77.
        let r = home.run(["init"])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.contains("a vault already exists at \(vault)"), "\(r)")
        #expect(!r.stderr.contains("remove the file"), "\(r)")
        #expect(!r.stderr.contains("assphrase"), "asked for a passphrase first: \(r)")
        #expect(home.vaultBytes() == before)
    }

    @Test func hugeKDFMemoryIsAUsageErrorNotACrash() {
        let home = TestHome()
        for size in ["99999999999999999G", "18446744073709551615K", "0M", "-1M", "M"] {
            let r = home.run(["init", "--kdf-memory=\(size)"])
            #expect(r.status == 64, "\(size): \(r)")
            #expect(r.stderr.contains("invalid --kdf-memory"), "\(size): \(r)")
        }
    }

    @Test func unlockJSONFlagMatchesShellJSON() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["unlock", "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "unlock.schema.json")
    }

    @Test func requirementsListHasJSON() {
        let home = TestHome()
        home.initVault()
        let req = home.write("req.json", #"{"version": 1, "sources": [{"id": "ads", "type": "api-key", "required": true}, {"id": "crossref", "type": "email"}]}"#)
        #expect(home.unlocked(["requirements", "add", req, "--name", "app"]).status == 0)
        let r = home.unlocked(["requirements", "ls", "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "requirements-list.schema.json")
        let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let manifests = obj?["manifests"] as? [[String: Any]]
        #expect(manifests?.first?["name"] as? String == "app")
        #expect(manifests?.first?["sources"] as? [String] == ["ads", "crossref"])
    }
}

@Suite("first-hour polish: suggestions and warnings, black-box")
struct PolishSuggestionCLITests {
    @Test func mistypedCommandGetsTheNearestOne() {
        let home = TestHome()
        let r = home.run(["lsit"])
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("coffer: error: unknown command 'lsit'"), "\(r)")
        #expect(r.stderr.contains("did you mean `coffer ls`?"), "\(r)")
        let far = home.run(["frobnicate"])
        #expect(far.status == 64, "\(far)")
        #expect(!far.stderr.contains("did you mean"), "\(far)")
        // Real commands and help are untouched.
        #expect(home.run(["help"]).status == 0)
        #expect(home.run(["ls", "--help"]).status == 0)
    }

    @Test func mistypedItemNameGetsTheNearestOne() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB").status == 0)
        let r = home.unlocked(["get", "work/opneai"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("no item named 'work/opneai'"), "\(r)")
        #expect(r.stderr.contains("did you mean `work/openai`?"), "\(r)")
        #expect(!r.stderr.contains("sk-proj"), "a value leaked into the error")
        let far = home.unlocked(["get", "personal/bank"])
        #expect(far.status == 66 && !far.stderr.contains("did you mean"), "\(far)")
    }

    @Test func misspelledConfigKeyIsReported() throws {
        let home = TestHome()
        home.initVault()
        let dir = home.path("home/.config/coffer")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = home.write("home/.config/coffer/config", "session.timout = 5m\n")
        let r = home.unlocked(["unlock"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("config:1: unknown key 'session.timout' (did you mean session.timeout?); ignored"), "\(r)")
    }

    @Test func multiLineNotesGetNoKeyWarning() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "notes/recovery", "--type", "note"], stdin: "first line\nsecond line with spaces\n")
        #expect(r.status == 0, "\(r)")
        #expect(!r.stderr.contains("warning"), "\(r)")
        let get = home.unlocked(["get", "notes/recovery"])
        #expect(get.stdout.contains("first line\nsecond line with spaces"), "\(get)")
    }

    @Test func pastExpiryWarns() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "old", "--type", "api-key", "--expires", "2020-01-01"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("--expires 2020-01-01 is in the past"), "\(r)")
        let future = home.unlocked(["add", "new", "--type", "api-key", "--expires", "30d"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(future.status == 0 && !future.stderr.contains("in the past"), "\(future)")
    }
}

@Suite("first-hour polish: run and references, black-box")
struct PolishRunCLITests {
    static let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"

    @Test func referencesExpandEnvironmentVariables() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "db/prod/password", "--type", "login", "--field", "username=app", "--secret", "password"], stdin: "prod-secret").status == 0)
        let r = home.unlocked(["read", "coffer://db/${APP_ENV}/password"], env: ["APP_ENV": "prod"])
        #expect(r.status == 0 && r.out == "prod-secret", "\(r)")
        let unset = home.unlocked(["read", "coffer://db/${APP_ENV}/password"])
        #expect(unset.status == 64, "\(unset)")
        #expect(unset.stderr.contains("the variable APP_ENV is not set"), "\(unset)")
        let run = home.run(["run", "--passphrase-fd", "3", "--env", "PW=coffer://db/${APP_ENV}/password", "--", "printenv", "PW"], fd3: home.passphrase, env: ["APP_ENV": "prod"])
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

extension TestHome {
    /// Runs any program in the sandbox's environment (plus `env`).
    static func spawn(_ home: TestHome, _ exe: String, _ args: [String], env extra: [String: String] = [:]) -> CLIResult {
        var env = home.environment
        for (k, v) in extra { env[k] = v }
        return Spawn.run(exe, args, stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
    }
}

@Suite("first-hour polish: passphrase strength, black-box")
struct PassphraseStrengthCLITests {
    @Test func initRefusesAFarTooWeakPassphraseUnlessForced() {
        let home = TestHome()
        let weak = home.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "a\n")
        #expect(weak.status == 64, "\(weak)")
        #expect(weak.stderr.contains("the passphrase is far too weak"), "\(weak)")
        #expect(!FileManager.default.fileExists(atPath: home.vaultPath), "a vault was created")
        let forced = home.run(["init", "--force"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "a\n")
        #expect(forced.status == 0, "\(forced)")
        #expect(forced.stderr.contains("warning: the passphrase is weak"), "\(forced)")
    }

    @Test func weakButAcceptablePassphrasesWarnStrongOnesDoNot() {
        let home = TestHome()
        let r = home.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "bench passphrase\n")
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("warning: the passphrase is weak (about"), "\(r)")
        #expect(!r.stderr.contains("bench passphrase"), "the passphrase was printed")
        let strong = TestHome()
        let s = strong.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "correct horse battery staple\n")
        #expect(s.status == 0 && !s.stderr.contains("passphrase is weak"), "\(s)")
    }

    @Test func passwdChecksTheNewPassphrase() {
        let home = TestHome()
        home.initVault()
        let newFile = home.write("new", "hunter2\n")
        let r = home.unlocked(["passwd", "--new-passphrase-file", newFile])
        #expect(r.status == 64 && r.stderr.contains("far too weak"), "\(r)")
        #expect(home.unlocked(["ls"]).status == 0, "the old passphrase must still work")
    }
}

@Suite("first-hour polish: completions as documented, black-box")
struct CompletionInstallCLITests {
    @Test func documentedBashAndZshLinesWorkInAFreshHome() throws {
        let home = TestHome()
        let bin = URL(fileURLWithPath: CofferBinary.path).deletingLastPathComponent().path
        let script = """
            set -e
            mkdir -p ~/.local/share/bash-completion/completions
            coffer --generate-completion-script bash > ~/.local/share/bash-completion/completions/coffer
            mkdir -p ~/.zfunc && coffer --generate-completion-script zsh > ~/.zfunc/_coffer
            mkdir -p ~/.config/fish/completions
            coffer --generate-completion-script fish > ~/.config/fish/completions/coffer.fish
            """
        let r = TestHome.spawn(home, "/bin/bash", ["-c", script], env: ["PATH": bin + ":" + (home.environment["PATH"] ?? "/usr/bin:/bin")])
        #expect(r.status == 0, "\(r)")
        for (file, marker) in [
            ("home/.local/share/bash-completion/completions/coffer", "complete"),
            ("home/.zfunc/_coffer", "#compdef coffer"),
            ("home/.config/fish/completions/coffer.fish", "complete -c 'coffer'"),
        ] {
            let text = (try? String(contentsOfFile: home.path(file), encoding: .utf8)) ?? ""
            #expect(text.contains(marker), "\(file) lacks \(marker)")
        }
        #expect(home.run(["--help"]).stdout.contains("--generate-completion-script"))
    }
}

@Suite("first-hour polish: counts that match, black-box")
struct CountsCLITests {
    @Test func cloneCountsWhatLsLists() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "api-key"], stdin: "k1").status == 0)
        #expect(home.unlocked(["add", "b", "--type", "api-key"], stdin: "k2").status == 0)
        let req = home.write("m.json", #"{"version": 1, "sources": [{"id": "x", "type": "api-key"}]}"#)
        #expect(home.unlocked(["requirements", "add", req, "--name", "app"]).status == 0)
        #expect(home.unlocked(["rm", "a"]).status == 0)
        #expect(home.unlocked(["export", "--out", home.path("f.cb")]).status == 0)
        let clone = home.unlocked(["clone", home.path("f.cb"), "--vault", home.path("c.coffer")])
        #expect(clone.status == 0, "\(clone)")
        let listed = home.unlocked(["ls", "--vault", home.path("c.coffer")]).out.split(separator: "\n")
        #expect(listed.count == 1, "\(listed)")
        #expect(clone.stderr.contains("from \(home.path("f.cb")): 1 item\n"), "\(clone)")
    }
}
