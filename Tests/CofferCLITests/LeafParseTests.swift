import CofferTestSupport
import Foundation
import Testing

/// A verb is parsed as its own root when that succeeds (Sources/coffer/
/// LeafParse.swift); help, completion requests and every parse error go
/// through the whole command tree, so what the user sees names `coffer VERB`.
@Suite("verbs parsed as their own root")
struct LeafParseTests {
    @Test("help, errors and completions still name `coffer VERB`")
    func messagesNameTheWholeCommand() {
        let home = TestHome()
        home.initVault()
        let help = home.run(["add", "--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: coffer add [<options>] <name>"), "\(help)")
        let bogus = home.run(["ls", "--bogus"])
        #expect(bogus.status == 64, "\(bogus)")
        #expect(bogus.stderr.contains("Unknown option '--bogus'") && bogus.stderr.contains("Usage: coffer ls"), "\(bogus)")
        let missing = home.run(["get"])
        #expect(missing.status == 64 && missing.stderr.contains("Usage: coffer get"), "\(missing)")
        let bad = home.run(["generate", "--length", "0"])
        #expect(bad.status == 64 && bad.stderr == "coffer: error: --length must be between 1 and 4096, got 0\n", "\(bad)")
        let script = home.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0 && script.stdout.contains("coffer"), "\(script)")
    }

    @Test("options, repeated options, flags and `--` parse as before")
    func optionsParse() {
        let home = TestHome()
        home.initVault()
        #expect(
            home.unlocked(["add", "a/b", "--type", "login", "--field", "username=u", "--tag", "x", "--tag", "y", "--url", "https://e.x"], stdin: "pw\n").status
                == 0)
        let ls = home.unlocked(["ls", "--tag", "y", "--json"])
        #expect(ls.status == 0 && ls.stdout.contains("\"a/b\""), "\(ls)")
        let get = home.unlocked(["get", "a/b", "--field", "username"])
        #expect(get.out == "u", "\(get)")
        let run = home.unlocked(["run", "--", "sh", "-c", "echo --help"])
        #expect(run.status == 0 && run.out == "--help", "\(run)")
    }
}
