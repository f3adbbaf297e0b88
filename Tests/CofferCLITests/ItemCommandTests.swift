import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("coffer init/add/get/ls/edit/rm/history, black-box")
struct ItemCommandTests {
    @Test func initCreatesPrivateFiles() throws {
        let home = TestHome()
        let r = home.unlocked(["init"] + FastKDF.arguments)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("below 19 MiB"), "weak KDF must warn")
        var st = stat()
        #expect(stat(home.vaultPath, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(stat((home.vaultPath as NSString).deletingLastPathComponent, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        // A second init refuses to overwrite.
        let again = home.unlocked(["init"] + FastKDF.arguments)
        #expect(again.status == 73)
        #expect(again.stderr.contains("already exists"))
    }

    @Test func passphraseSourcesInOrder() {
        let home = TestHome()
        let pwFile = home.path("pw")
        FileManager.default.createFile(atPath: pwFile, contents: Data("from-file\n".utf8))
        #expect(home.run(["init", "--passphrase-file", pwFile] + FastKDF.arguments).status == 0)
        // --passphrase-file works, trailing newline stripped.
        #expect(home.run(["ls", "--passphrase-file", pwFile]).status == 0)
        // COFFER_PASSPHRASE works (no newline to strip).
        #expect(home.run(["ls"], env: ["COFFER_PASSPHRASE": "from-file"]).status == 0)
        // --passphrase-fd wins over the environment.
        let fdWins = home.run(["ls", "--passphrase-fd", "3"], fd3: "from-file\n", env: ["COFFER_PASSPHRASE": "wrong"])
        #expect(fdWins.status == 0, "\(fdWins)")
        // No source and no terminal: a clear error, never a hang.
        let none = home.run(["ls"])
        #expect(none.status == 77)
        #expect(none.stderr.contains("no terminal"))
        // Unreadable descriptor.
        let badFD = home.run(["ls", "--passphrase-fd", "7"])
        #expect(badFD.status == 64)
        #expect(badFD.stderr.contains("file descriptor 7"))
    }

    @Test func addAndGetEveryWay() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--source", "openai", "--tag", "ai"], stdin: "sk-proj-abc\n").status == 0)
        let login = home.unlocked(
            ["add", "personal/github", "--type", "login", "--field", "username=octo", "--url", "https://github.com", "--secret", "password"], stdin: "hunter2")
        #expect(login.status == 0, "\(login)")
        #expect(!login.stderr.contains("argv"), "no warning for non-secret --field")
        let warned = home.unlocked(["add", "svc", "--type", "custom", "--field", "token=t0k3n"])
        #expect(warned.stderr.contains("command line"), "secret on argv must warn")

        #expect(home.unlocked(["get", "work/openai"]).stdout == "sk-proj-abc\n")
        #expect(home.unlocked(["get", "personal/github"]).stdout == "hunter2\n")
        #expect(home.unlocked(["get", "personal/github", "--field", "username"]).stdout == "octo\n")
        #expect(home.unlocked(["get", "svc"]).stdout == "t0k3n\n")

        let json = home.unlocked(["get", "personal/github", "--json"])
        #expect(json.status == 0)
        SchemaValidation.expectValid(json.stdout, schema: "item.schema.json")
        let obj = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as! [String: Any]
        #expect(obj["name"] as? String == "personal/github")
        #expect(obj["type"] as? String == "login")
        let field = home.unlocked(["get", "personal/github", "--field", "url", "--json"])
        SchemaValidation.expectValid(field.stdout, schema: "field-value.schema.json")
        #expect(field.stdout.contains("https://github.com"))

        let ls = home.unlocked(["ls", "--json"])
        SchemaValidation.expectValid(ls.stdout, schema: "ls.schema.json")
        let names = (try JSONSerialization.jsonObject(with: Data(ls.stdout.utf8)) as! [[String: Any]]).map { $0["name"] as! String }
        #expect(names == ["personal/github", "svc", "work/openai"])
        #expect(!ls.stdout.contains("hunter2") && !ls.stdout.contains("sk-proj"))
        #expect(home.unlocked(["ls", "--tag", "ai"]).stdout.hasPrefix("work/openai"))
        #expect(home.unlocked(["ls", "--type", "login"]).stdout.hasPrefix("personal/github"))
    }

    @Test func editRenameUnsetTagsAndHistory() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "login", "--field", "username=u", "--url", "https://x"], stdin: "p1").status == 0)
        #expect(home.unlocked(["edit", "a", "--secret", "password"], stdin: "p2").status == 0)
        #expect(home.unlocked(["edit", "a", "--rename", "team/a", "--unset", "url", "--tag", "t1", "--expires", "2099-01-01"]).status == 0)
        #expect(home.unlocked(["get", "a"]).status == 66)
        let item = home.unlocked(["get", "team/a", "--json"])
        #expect(item.stdout.contains("2099-01-01") && item.stdout.contains("t1") && !item.stdout.contains("https://x"))
        #expect(home.unlocked(["get", "team/a"]).stdout == "p2\n")

        let hist = home.unlocked(["history", "team/a", "--json"])
        SchemaValidation.expectValid(hist.stdout, schema: "history.schema.json")
        #expect(!hist.stdout.contains("p1"), "secrets hidden without --show-secrets")
        let shown = home.unlocked(["history", "team/a", "--show-secrets"])
        #expect(shown.stdout.contains("password = p1") && shown.stdout.contains("password = p2"))
        #expect(shown.stdout.contains("url = (removed)"))

        #expect(home.unlocked(["rm", "team/a"]).status == 0)
        #expect(home.unlocked(["get", "team/a"]).status == 66)
        #expect(home.unlocked(["ls"]).stdout.isEmpty)
    }

    /// Every error: one line (plus a hint), the documented exit code, and
    /// the vault file byte-for-byte unchanged.
    @Test(
        arguments: [
            (["get", "nope"], "", 66, "no item named 'nope'"),
            (["add", "dup"], "v2", 73, "already exists"),
            (["add", "x", "--expires", "2020-02-30"], "v", 64, "invalid --expires"),
            (["add", "x", "--expires", "soon"], "v", 64, "invalid --expires"),
            (["add", "bad//name"], "v", 64, "invalid item name"),
            (["add", "x", "--field", "novalue"], "", 64, "KEY=VALUE"),
            (["edit", "nope", "--tag", "t"], "", 66, "no item named"),
            (["edit", "dup"], "", 64, "nothing to change"),
            (["edit", "dup", "--unset", "ghost"], "", 66, "no field 'ghost'"),
            (["get", "dup", "--field", "ghost"], "", 66, "no field 'ghost'"),
            (["rm", "nope"], "", 66, "no item named"),
            (["history", "nope"], "", 66, "no item named"),
            (["add", "x"], "", 64, "empty"),
        ] as [([String], String, Int32, String)])
    func errorsLeaveTheVaultUnchanged(args: [String], stdin: String, code: Int32, message: String) {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "dup"], stdin: "v1").status == 0)
        let before = home.vaultBytes()
        let r = home.unlocked(args, stdin: stdin)
        #expect(r.status == code, "\(r)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stderr.hasPrefix("coffer: error: "), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(!r.stderr.contains("Fatal error") && !r.stderr.contains("Stack"))
        #expect(home.vaultBytes() == before, "a failed command changed the vault")
    }

    @Test func wrongPassphraseAndMissingVault() {
        let home = TestHome()
        let missing = home.unlocked(["get", "x"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("no vault at") && missing.stderr.contains("coffer init"))
        home.initVault()
        #expect(home.unlocked(["add", "x"], stdin: "secret").status == 0)
        let before = home.vaultBytes()
        let wrong = home.run(["get", "x", "--passphrase-fd", "3"], fd3: "not it\n")
        #expect(wrong.status == 77)
        #expect(wrong.stderr.contains("wrong passphrase"))
        #expect(!wrong.stderr.contains("not it"))
        #expect(home.vaultBytes() == before)
        // --vault and COFFER_VAULT select other files.
        let other = home.path("other/v.coffer")
        #expect(home.unlocked(["init", "--vault", other] + FastKDF.arguments).status == 0)
        #expect(home.unlocked(["get", "x"], env: ["COFFER_VAULT": other]).status == 66)
        #expect(home.unlocked(["get", "x", "--vault", home.vaultPath], env: ["COFFER_VAULT": other]).stdout == "secret\n")
    }

    /// Nothing a user typed is readable in the vault file.
    @Test func stringsFindNoNameOrSecret() throws {
        let home = TestHome()
        home.initVault()
        let secrets = ["sk-live-PLAINTEXTSECRET", "hunter2hunter2", "octocat-user"]
        #expect(home.unlocked(["add", "work/openai-prod", "--tag", "productiontag", "--source", "openaisource"], stdin: secrets[0]).status == 0)
        #expect(
            home.unlocked(["add", "personal/github-login", "--type", "login", "--field", "username=\(secrets[2])", "--secret", "password"], stdin: secrets[1])
                .status == 0)
        #expect(home.unlocked(["edit", "personal/github-login", "--field", "notefield=visible-note-text"]).status == 0)
        let strings = Spawn.run(
            "/usr/bin/env", ["strings", "-n", "4", home.vaultPath], stdin: nil, fd3: nil,
            environment: ProcessInfo.processInfo.environment, workDir: "/")
        // Fall back to scanning the raw bytes when binutils is missing.
        let haystack = strings.status == 0 ? strings.stdout : String(decoding: home.vaultBytes(), as: UTF8.self)
        for needle in secrets + ["openai", "github", "productiontag", "openaisource", "notefield", "visible-note", "username", "password", "login"] {
            #expect(!haystack.contains(needle), "'\(needle)' is readable in the vault file")
        }
        #expect(!home.vaultBytes().isEmpty)
    }
}
