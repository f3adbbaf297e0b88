import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension TestHome {
    /// `coffer git-credential ACTION` with the passphrase on fd 3 and
    /// `input` as git's request on stdin.
    func gitCredential(_ action: String, _ input: String, env: [String: String] = [:]) -> CLIResult {
        unlocked(["git-credential", action], stdin: input, env: env)
    }

    /// The same in a new session (no controlling terminal), with only the
    /// environment given: as git runs a helper from a cron job or CI.
    func gitCredentialWithoutTerminal(_ action: String, _ input: String, env: [String: String] = [:]) -> CLIResult {
        var e = environment
        for (k, v) in env { e[k] = v }
        return Spawn.run("/usr/bin/setsid", ["-w", CofferBinary.path, "git-credential", action], stdin: input, fd3: nil, environment: e, workDir: root.path)
    }
}

/// `coffer git-credential`, speaking git's helper protocol without git
/// (the real git is driven in GitCredentialInteropTests).
@Suite("coffer git-credential")
struct GitCredentialCLITests {
    static func home() -> TestHome {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(
            ["add", "work/forge", "--type", "login", "--field", "username=alice", "--field", "url=https://git.example.com:8443/team/app.git"],
            stdin: "forge-token-1\n")
        precondition(r.status == 0, "\(r)")
        return home
    }

    @Test func getMatchesLoginURLsByProtocolHostAndPath() {
        let home = Self.home()
        let q = "protocol=https\nhost=git.example.com:8443\n"
        #expect(home.gitCredential("get", q + "\n").stdout == "username=alice\npassword=forge-token-1\n")
        // With useHttpPath git sends the path: it must match.
        #expect(home.gitCredential("get", q + "path=team/app.git\n\n").stdout == "username=alice\npassword=forge-token-1\n")
        #expect(home.gitCredential("get", q + "path=team/other.git\n\n").stdout == "")
        // Other protocol, host, port or username: nothing, exit 0.
        for other in [
            "protocol=http\nhost=git.example.com:8443\n", "protocol=https\nhost=git.example.com\n",
            "protocol=https\nhost=example.com:8443\n", q + "username=bob\n",
        ] {
            let r = home.gitCredential("get", other + "\n")
            #expect(r.status == 0 && r.stdout.isEmpty, "\(other): \(r)")
        }
        // url= is split as git does; array and unknown keys are ignored.
        let r = home.gitCredential(
            "get",
            "capability[]=authtype\ncapability[]=state\nwwwauth[]=Basic realm=\"x\"\nurl=https://alice@git.example.com:8443/team/app.git\nfuture-key=1\n\n")
        #expect(r.stdout == "username=alice\npassword=forge-token-1\n", "\(r)")
    }

    @Test func namingConventionAndStoreAndErase() throws {
        let home = Self.home()
        let before = "protocol=https\nhost=code.example.org\n"
        #expect(home.gitCredential("get", before + "\n").stdout.isEmpty)
        // store: a new login item git/HOST, which get then serves.
        var r = home.gitCredential("store", before + "username=bob\npassword=tok-2\n\n")
        #expect(r.status == 0 && r.stdout.isEmpty, "\(r)")
        #expect(home.unlocked(["get", "git/code.example.org", "--field", "username"]).out == "bob")
        #expect(home.gitCredential("get", before + "\n").stdout == "username=bob\npassword=tok-2\n")
        // store again with a new password updates the same item.
        r = home.gitCredential("store", before + "username=bob\npassword=tok-3\n\n")
        #expect(r.status == 0)
        #expect(home.unlocked(["get", "git/code.example.org"]).out == "tok-3")
        #expect(home.unlocked(["ls"]).out.split(separator: "\n").count == 2)
        // A hand-made git/HOST item without url is found by its name.
        #expect(home.unlocked(["add", "git/plain.example.net", "--type", "login", "--field", "username=carol"], stdin: "p-4\n").status == 0)
        #expect(home.gitCredential("get", "protocol=https\nhost=plain.example.net\n\n").stdout == "username=carol\npassword=p-4\n")
        // erase with another password removes nothing; with the stored one,
        // the item.
        r = home.gitCredential("erase", before + "username=bob\npassword=wrong\n\n")
        #expect(r.status == 0)
        #expect(home.unlocked(["get", "git/code.example.org"]).status == 0)
        r = home.gitCredential("erase", before + "username=bob\npassword=tok-3\n\n")
        #expect(r.status == 0)
        #expect(home.unlocked(["get", "git/code.example.org"]).status == 66)
        // erase never deletes the user's own login outside git/: it warns.
        r = home.gitCredential("erase", "protocol=https\nhost=git.example.com:8443\nusername=alice\npassword=forge-token-1\n\n")
        #expect(r.status == 0 && r.stderr.contains("not erasing an item outside git/"), "\(r)")
        #expect(home.unlocked(["get", "work/forge"]).out == "forge-token-1")
    }

    /// Issue 24 item 8: the protocol must match, as git-credential-store
    /// and libsecret do; an item lists more protocols on purpose with a
    /// `git-protocols` field.
    @Test func protocolMustMatchUnlessTheItemListsSeveral() throws {
        let home = Self.home()
        #expect(home.unlocked(["add", "git/plain.example.net", "--type", "login", "--field", "username=carol"], stdin: "p-4\n").status == 0)
        let https = "protocol=https\nhost=plain.example.net\n\n"
        let http = "protocol=http\nhost=plain.example.net\n\n"
        #expect(home.gitCredential("get", https).stdout == "username=carol\npassword=p-4\n")
        // The review's case: protocol=http got the password kept for https.
        var r = home.gitCredential("get", http)
        #expect(r.status == 0 && r.stdout.isEmpty, "\(r)")
        r = home.gitCredential("get", "url=http://plain.example.net/team/app.git\n\n")
        #expect(r.status == 0 && r.stdout.isEmpty, "\(r)")
        // erase for http leaves the https item alone.
        r = home.gitCredential("erase", "protocol=http\nhost=plain.example.net\nusername=carol\npassword=p-4\n\n")
        #expect(r.status == 0, "\(r)")
        #expect(home.unlocked(["get", "git/plain.example.net"]).out == "p-4")
        // store for http creates its own item and does not touch https's.
        r = home.gitCredential("store", "protocol=http\nhost=plain.example.net\nusername=carol\npassword=http-pw\n\n")
        #expect(r.status == 0, "\(r)")
        #expect(home.unlocked(["get", "git/plain.example.net"]).out == "p-4")
        #expect(home.unlocked(["get", "git/carol@plain.example.net", "--field", "url"]).out == "http://plain.example.net")
        #expect(home.gitCredential("get", http).stdout == "username=carol\npassword=http-pw\n")
        #expect(home.gitCredential("get", https).stdout == "username=carol\npassword=p-4\n")
        #expect(home.unlocked(["rm", "git/carol@plain.example.net"]).status == 0)
        // Several protocols on purpose: the item lists them.
        #expect(home.unlocked(["edit", "git/plain.example.net", "--field", "git-protocols=https, http"]).status == 0)
        #expect(home.gitCredential("get", http).stdout == "username=carol\npassword=p-4\n")
        #expect(home.gitCredential("get", https).stdout == "username=carol\npassword=p-4\n")
        #expect(home.gitCredential("get", "protocol=smtp\nhost=plain.example.net\n\n").stdout.isEmpty)
        // A login's url names its protocol; git-protocols replaces it.
        #expect(home.gitCredential("get", "protocol=http\nhost=git.example.com:8443\n\n").stdout.isEmpty)
        #expect(home.unlocked(["edit", "work/forge", "--field", "git-protocols=http"]).status == 0)
        #expect(home.gitCredential("get", "protocol=http\nhost=git.example.com:8443\n\n").stdout == "username=alice\npassword=forge-token-1\n")
        #expect(home.gitCredential("get", "protocol=https\nhost=git.example.com:8443\n\n").stdout.isEmpty)
    }

    @Test func noSessionAndNoTerminalPrintsNothingAndExitsZero() throws {
        let home = Self.home()
        let before = home.vaultBytes()
        for action in ["get", "store", "erase"] {
            let r = home.gitCredentialWithoutTerminal(action, "protocol=https\nhost=git.example.com:8443\nusername=alice\npassword=x\n\n")
            #expect(r.status == 0 && r.stdout.isEmpty && r.stderr.isEmpty, "\(action): \(r)")
        }
        // Also with no vault at all.
        let none = TestHome()
        let r = none.gitCredentialWithoutTerminal("get", "protocol=https\nhost=x\n\n")
        #expect(r.status == 0 && r.stdout.isEmpty && r.stderr.isEmpty, "\(r)")
        // A session is enough (and is what git users have).
        let unlock = home.unlocked(["unlock", "--shell", "sh"])
        let token = try SessionTests.token(fromShellLine: unlock.out)
        let s = home.gitCredentialWithoutTerminal("get", "protocol=https\nhost=git.example.com:8443\n\n", env: ["COFFER_SESSION": token])
        #expect(s.stdout == "username=alice\npassword=forge-token-1\n", "\(s)")
        #expect(home.vaultBytes() == before)
    }

    @Test func badInputIsOneClearLineAndTheVaultIsUnchanged() {
        let home = Self.home()
        let before = home.vaultBytes()
        let cases: [(String, String, Int32, String)] = [
            ("get", "protocol=https\nthis line has no equals sign\n\n", 65, "line 2 is not key=value"),
            ("store", "=value\n\n", 65, "line 1 is not key=value"),
            ("store", "protocol=https\nhost=h\nusername=u\npassword=\u{FF}\n\n", 65, "not valid UTF-8"),
            ("get", "protocol=https\nhost=a\u{0}b\n\n", 65, "NUL byte"),
            ("get", "url=not a url\n\n", 65, "not a URL"),
            ("get", "host=" + String(repeating: "x", count: 70_000) + "\n\n", 65, "larger than 64 KiB"),
            ("fetch", "protocol=https\n\n", 64, "unknown git credential action 'fetch'"),
        ]
        for (action, input, code, text) in cases {
            var data = Data(input.utf8)
            // A real non-UTF-8 byte, not the encoding of U+00FF.
            if input.contains("\u{FF}") {
                data = Data(input.replacingOccurrences(of: "\u{FF}", with: "").utf8)
                data.insert(0xFF, at: data.count - 2)
            }
            let r = home.runRaw(["git-credential", action, "--passphrase-fd", "3"], stdin: data, fd3: home.passphrase + "\n")
            #expect(r.status == code, "\(action) \(input.prefix(60)): \(r)")
            let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }
            #expect(errors.count == 1 && errors[0].contains(text), "\(r.stderr)")
            #expect(r.stdout.isEmpty)
            #expect(!r.stderr.contains("xxxxxxxxxx"))
        }
        #expect(home.vaultBytes() == before)
    }
}

extension TestHome {
    /// `run` with raw bytes on stdin (for non-UTF-8 input).
    func runRaw(_ args: [String], stdin: Data, fd3: String?) -> CLIResult {
        let file = path("stdin-\(UUID().uuidString.prefix(6))")
        FileManager.default.createFile(atPath: file, contents: stdin)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return Spawn.run(
            "/bin/sh", ["-c", "exec \"$0\" \"$@\" < \"$STDIN_FILE\"", CofferBinary.path] + args, stdin: nil, fd3: fd3,
            environment: environment.merging(["STDIN_FILE": file]) { $1 }, workDir: root.path)
    }
}
