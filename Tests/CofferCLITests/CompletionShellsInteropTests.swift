import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Completion of item and field names in real interactive zsh and fish
/// (driven through a pseudo-terminal by expect), with the scripts that
/// `coffer --generate-completion-script` prints. bash is tested without a
/// terminal in VerbsCLITests.
@Suite("completion in real zsh and fish", .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct CompletionShellsInteropTests {
    /// A vault with two folders of items, a session, and `coffer` on PATH.
    func setUp() throws -> (TestHome, [String: String]) {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "personal/github", "--type", "login", "--field", "username=octo", "--secret", "password"], stdin: "pw").status == 0)
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk").status == 0)
        let r = home.unlocked(["unlock", "--shell", "sh"])
        let prefix = "export COFFER_SESSION='"
        guard r.out.hasPrefix(prefix) else { throw Failure("no session: \(r)") }
        let bin = home.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        symlink(CofferBinary.path, bin + "/coffer")
        var env = home.environment
        env["COFFER_SESSION"] = String(r.out.dropFirst(prefix.count).dropLast(2))
        env["PATH"] = bin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["TERM"] = "dumb"
        return (home, env)
    }

    struct Failure: Error {
        var m: String
        init(_ m: String) { self.m = m }
    }

    func expect(_ home: TestHome, _ env: [String: String], _ script: String) -> CLIResult {
        let path = home.path("t-\(UUID().uuidString.prefix(6)).exp")
        FileManager.default.createFile(atPath: path, contents: Data(script.utf8))
        return Spawn.run("/usr/bin/env", ["expect", path], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
    }

    /// expect's helper: wait for a pattern, exit with `code` on timeout or EOF.
    static let want = """
        set timeout 30
        proc want {pattern code} {
            expect {
                -re $pattern {}
                timeout { puts "\\nTIMEOUT waiting for $pattern"; exit $code }
                eof { puts "\\nEOF waiting for $pattern"; exit $code }
            }
        }

        """

    @Test func zsh() throws {
        let (home, env) = try setUp()
        let dir = home.path("zfunc")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let script = home.run(["--generate-completion-script", "zsh"]).stdout
        FileManager.default.createFile(atPath: dir + "/_coffer", contents: Data(script.utf8))
        // Markers are computed by the shell, so the echo of the typed line never matches them.
        // Lines are cleared with ^U (emacs kill-whole-line), which zle reads in order with
        // what follows; ^C raced with the next keystrokes on a loaded machine (a signal
        // zsh handles late let the next line's first letter land on the old one).
        let r = expect(
            home, env,
            Self.want + """
                spawn zsh -f -i
                send "PS1='%% '; bindkey -e; fpath=(\(dir) \\$fpath); autoload -U compinit; compinit -u; echo READY\\$((40+2))\\r"
                want "READY42" 2
                send "coffer show \\t"
                want "personal/ +work/" 3
                send "\\025"
                send "coffer get personal/github --field \\t"
                want "(username +password|password +username)" 4
                send "\\025"
                send "exit\\r"
                expect eof
                """)
        #expect(r.status == 0, "\(r)")
    }

    @Test func fish() throws {
        let (home, env) = try setUp()
        let file = home.path("coffer.fish")
        FileManager.default.createFile(atPath: file, contents: Data(home.run(["--generate-completion-script", "fish"]).stdout.utf8))
        let r = expect(
            home, env,
            Self.want + """
                spawn fish --no-config -i
                send "source \(file); echo READY(math 40+2)\\r"
                want "READY42" 2
                send "complete -C 'coffer show '; echo MARK(math 40+3)\\r"
                want "personal/\\r\\nwork/\\r\\nMARK43" 3
                send "complete -C 'coffer get personal/github --field '; echo MARK(math 40+4)\\r"
                want "username\\[^\\r\\]*\\r\\n.*MARK44" 4
                send "exit\\r"
                expect eof
                """)
        #expect(r.status == 0, "\(r)")
    }
}
