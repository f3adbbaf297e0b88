import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A vault with a login item (username, password, url, totp), an API key
/// and a note, for the daily verbs.
private func verbsHome() -> TestHome {
    let home = TestHome()
    home.initVault()
    var r = home.unlocked(
        ["add", "personal/github", "--type", "login", "--field", "username=octo", "--url", "https://github.com", "--tag", "code", "--secret", "password"],
        stdin: "hunter2-SECRET")
    precondition(r.status == 0, "\(r)")
    // RFC 6238's SHA-1 seed "12345678901234567890" in base32.
    r = home.unlocked(["edit", "personal/github", "--totp"], stdin: "otpauth://totp/GitHub:octo?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=GitHub\n")
    precondition(r.status == 0, "\(r)")
    r = home.unlocked(["add", "work/openai", "--source", "openai", "--tag", "ai"], stdin: "sk-proj-SECRET")
    precondition(r.status == 0, "\(r)")
    r = home.unlocked(["add", "work/db", "--type", "login", "--field", "username=admin", "--secret", "password"], stdin: "pg-SECRET")
    precondition(r.status == 0, "\(r)")
    return home
}

private func jsonObject(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

@Suite("coffer generate")
struct GenerateCLITests {
    @Test func defaultsAndEntropy() {
        let home = TestHome()
        let r = home.run(["generate"])
        #expect(r.status == 0, "\(r)")
        #expect(r.out.count == 25)
        #expect(r.stderr.contains("bits of entropy"))
        let other = home.run(["generate"])
        #expect(other.out != r.out)
        let short = home.run(["generate", "--length", "8", "--chars", "digits"])
        #expect(short.out.count == 8 && short.out.allSatisfy(\.isNumber), "\(short)")
    }

    @Test func wordsComeFromTheShippedWordlist() {
        // The EFF list is built into the binary: this runs the built
        // coffer, from a folder with no resources next to it.
        let r = TestHome().run(["generate", "--words", "6", "--separator", " "])
        #expect(r.status == 0, "\(r)")
        #expect(r.out.split(separator: " ").count == 6)
        #expect(r.stderr.contains("77.5 bits"))
    }

    @Test func badLengthsAreUsageErrors() {
        let home = TestHome()
        for args in [
            ["--length", "0"], ["--length", "4097"], ["--length=-3"], ["--chars", "emoji"], ["--words", "0"], ["--words", "3", "--length", "9"],
            ["--separator", "x"],
        ] {
            let r = home.run(["generate"] + args)
            #expect(r.status == 64, "\(args): \(r)")
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.hasPrefix("coffer: error: "), "\(r)")
        }
    }

    @Test func addAndEditGenerateWithoutPrinting() throws {
        let home = verbsHome()
        let add = home.unlocked(["add", "new/login", "--type", "login", "--field", "username=me", "--generate", "--length", "40"])
        #expect(add.status == 0, "\(add)")
        #expect(add.stdout.isEmpty)
        let pw = home.unlocked(["get", "new/login"]).out
        #expect(pw.count == 40)
        #expect(!add.stderr.contains(pw))
        let edit = home.unlocked(["edit", "new/login", "--generate", "--words", "5"])
        #expect(edit.status == 0, "\(edit)")
        #expect(edit.stdout.isEmpty)
        let phrase = home.unlocked(["get", "new/login"]).out
        #expect(phrase.split(separator: "-").count >= 5 && phrase != pw)
        let field = home.unlocked(["edit", "new/login", "--generate-field", "pin", "--length", "6", "--chars", "digits"])
        #expect(field.status == 0, "\(field)")
        #expect(home.unlocked(["get", "new/login", "--field", "pin"]).out.count == 6)
        let bad = home.unlocked(["edit", "new/login", "--generate", "--length", "0"])
        #expect(bad.status == 64)
        #expect(home.unlocked(["get", "new/login"]).out == phrase)
    }
}

@Suite("coffer show")
struct ShowCLITests {
    @Test func masksSecretsUnlessRevealed() {
        let home = verbsHome()
        let r = home.unlocked(["show", "personal/github"])
        #expect(r.status == 0, "\(r)")
        for expected in [
            "personal/github", "login", "octo", "https://github.com", "code", "policy:   sync", "by replica", "password  ********", "totp      ********",
        ] {
            #expect(r.stdout.contains(expected), "missing \(expected): \(r)")
        }
        #expect(!r.stdout.contains("hunter2"))
        #expect(!r.stdout.contains("GEZDG"))
        let revealed = home.unlocked(["show", "personal/github", "--reveal"])
        #expect(revealed.stdout.contains("hunter2-SECRET"))
    }

    @Test func jsonMatchesItsSchema() throws {
        let home = verbsHome()
        let r = home.unlocked(["show", "personal/github", "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "show.schema.json")
        #expect(!r.stdout.contains("hunter2"))
        let obj = try #require(jsonObject(r.stdout) as? [String: Any])
        let fields = try #require(obj["fields"] as? [[String: Any]])
        #expect(fields.map { $0["name"] as? String } == ["username", "password", "url", "totp"])
        #expect(fields[1]["value"] is NSNull)
        #expect(obj["lastWrittenBy"] is String)
        let revealed = home.unlocked(["show", "personal/github", "--json", "--reveal"])
        SchemaValidation.expectValid(revealed.stdout, schema: "show.schema.json")
        #expect(revealed.stdout.contains("hunter2-SECRET"))
    }

    @Test func unknownItemExits66WithTheName() {
        let home = verbsHome()
        let r = home.unlocked(["show", "nope/nothing"])
        #expect(r.status == 66)
        #expect(r.stderr.contains("nope/nothing"))
    }
}

@Suite("coffer find and ls PREFIX/ --tree --tag")
struct FindCLITests {
    @Test func searchesNamesTagsSourcesUsernamesAndURLs() throws {
        let home = verbsHome()
        #expect(home.unlocked(["find", "GITHUB"]).stdout.hasPrefix("personal/github"))
        #expect(home.unlocked(["find", "octo"]).stdout.hasPrefix("personal/github"), "username")
        #expect(home.unlocked(["find", "github.com"]).stdout.hasPrefix("personal/github"), "url")
        #expect(home.unlocked(["find", "openai"]).stdout.hasPrefix("work/openai"), "source")
        #expect(home.unlocked(["find", "AI"]).stdout.contains("work/openai"), "tag")
        #expect(home.unlocked(["find", "admin"]).stdout.hasPrefix("work/db"))
        // Never secret values.
        for secret in ["hunter2", "sk-proj", "pg-SECRET", "GEZDG"] {
            let r = home.unlocked(["find", secret])
            #expect(r.status == 0)
            #expect(r.stdout.isEmpty, "\(secret) must not match: \(r)")
        }
        #expect(home.unlocked(["find", "zzz", "--fail-if-none"]).status == 1)
        let json = home.unlocked(["find", "o", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "find.schema.json")
        let list = try #require(jsonObject(json.stdout) as? [[String: Any]])
        #expect(list.count == 3)
        #expect(home.unlocked(["find", ""]).status == 64)
    }

    @Test func listsUnderAPrefixAndAsATree() {
        let home = verbsHome()
        let under = home.unlocked(["ls", "work/"])
        #expect(under.status == 0, "\(under)")
        #expect(under.stdout.split(separator: "\n").map { $0.split(separator: " ")[0] } == ["work/db", "work/openai"])
        #expect(home.unlocked(["ls", "work"]).stdout == under.stdout)
        let none = home.unlocked(["ls", "play/"])
        #expect(none.status == 66)
        #expect(none.stderr.contains("play"))
        let tree = home.unlocked(["ls", "--tree"])
        #expect(tree.out == "├── personal/\n│   └── github\n└── work/\n    ├── db\n    └── openai", "\(tree)")
        #expect(home.unlocked(["ls", "--tag", "code"]).stdout.hasPrefix("personal/github"))
        #expect(home.unlocked(["ls", "--tree", "--json"]).status == 64)
    }

    @Test("ls --tree: an item that is also a folder, nested folders, escaped and non-ASCII labels; the session's fast path prints the same")
    func treeOfNestedAndEscapedNames() throws {
        let home = TestHome()
        home.initVault()
        for name in ["a", "a/b", "a/c/d", "back\\slash", "café/ünï", "Zeta"] {
            let r = home.unlocked(["add", name], stdin: "v")
            #expect(r.status == 0, "\(name): \(r)")
        }
        let full = home.unlocked(["ls", "--tree"])
        #expect(full.status == 0, "\(full)")
        #expect(
            full.stdout == """
                ├── Zeta
                ├── a/
                │   ├── b
                │   └── c/
                │       └── d
                ├── back\\\\slash
                └── café/
                    └── ünï

                """, "\(full)")
        let token = try SessionTests.unlock(home)
        let fast = home.run(["ls", "--tree"], env: ["COFFER_SESSION": token])
        #expect(fast.status == 0 && fast.stdout == full.stdout, "\(fast)")
    }
}

@Suite("coffer otp")
struct OtpCLITests {
    @Test func rfc6238CodeAtAGivenTime() throws {
        let home = verbsHome()
        let r = home.unlocked(["otp", "personal/github", "--at", "59"])
        #expect(r.status == 0, "\(r)")
        #expect(r.out == "287082")
        #expect(home.unlocked(["otp", "personal/github", "--at", "1111111109"]).out == "081804")
        let json = home.unlocked(["otp", "personal/github", "--at", "1234567890", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "otp.schema.json")
        let obj = try #require(jsonObject(json.stdout) as? [String: Any])
        #expect(obj["code"] as? String == "005924")
        #expect(obj["remaining"] as? Int == 30 - 1_234_567_890 % 30)
        // Now: six digits, seconds left on stderr.
        let now = home.unlocked(["otp", "personal/github"])
        #expect(now.out.count == 6 && now.stderr.contains("s left"), "\(now)")
    }

    @Test func otherAlgorithmsDigitsAndPeriods() {
        let home = verbsHome()
        // RFC 6238 SHA-256 seed, 8 digits.
        let uri = "otpauth://totp/x?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA&algorithm=SHA256&digits=8"
        #expect(home.unlocked(["add", "sha256", "--type", "login", "--field", "username=x", "--generate", "--totp-uri", "-"], stdin: uri).status == 0)
        #expect(home.unlocked(["otp", "sha256", "--at", "59"]).out == "46119246")
    }

    @Test func badSecretsAndMissingThingsHaveTheirCodes() {
        let home = verbsHome()
        #expect(
            home.unlocked(
                ["add", "bad", "--type", "login", "--field", "username=x", "--generate", "--totp-uri", "-"], stdin: "otpauth://totp/x?secret=NOT*BASE32"
            ).status == 65)
        #expect(home.unlocked(["ls", "bad"]).status == 66, "nothing stored")
        // A bad value that got in another way (a plain field): 65 naming the part.
        #expect(home.unlocked(["edit", "work/db", "--field", "totp=otpauth://totp/x?secret=AB1C"]).status == 0)
        let r = home.unlocked(["otp", "work/db"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("secret parameter is not base32"), "\(r)")
        let missing = home.unlocked(["otp", "work/openai"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("no field 'totp'"))
        #expect(home.unlocked(["otp", "nope"]).status == 66)
        #expect(home.unlocked(["otp", "personal/github", "--at", "yesterday"]).status == 64)
    }
}

@Suite("coffer mv and cp")
struct MoveCopyCLITests {
    @Test func moveAndCopyOneItem() {
        let home = verbsHome()
        #expect(home.unlocked(["mv", "work/openai", "ai/openai"]).status == 0)
        #expect(home.unlocked(["get", "ai/openai"]).out == "sk-proj-SECRET")
        #expect(home.unlocked(["get", "work/openai"]).status == 66)
        #expect(home.unlocked(["cp", "ai/openai", "ai/openai-copy"]).status == 0)
        #expect(home.unlocked(["get", "ai/openai-copy"]).out == "sk-proj-SECRET")
        let copy = home.unlocked(["show", "ai/openai-copy"]).stdout
        #expect(copy.contains("source:   openai") && copy.contains("tags:     ai"))
        // The copy is its own item.
        #expect(home.unlocked(["edit", "ai/openai-copy", "--field", "note=x"]).status == 0)
        #expect(!home.unlocked(["show", "ai/openai"]).stdout.contains("note"))
    }

    @Test func movePrefixIsAllOrNothing() {
        let home = verbsHome()
        #expect(home.unlocked(["mv", "work/", "old-work/"]).status == 0)
        #expect(home.unlocked(["ls", "old-work/"]).stdout.split(separator: "\n").count == 2)
        #expect(home.unlocked(["ls", "work/"]).status == 66)
        #expect(home.unlocked(["cp", "old-work/", "work/"]).status == 0)
        // A clash anywhere: nothing moves, the vault file is unchanged.
        #expect(home.unlocked(["add", "new/db", "--type", "note"], stdin: "n").status == 0)
        let before = home.vaultBytes()
        let clash = home.unlocked(["mv", "work/", "new/"])
        #expect(clash.status == 73)
        #expect(clash.stderr.contains("new/db"))
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["mv", "nowhere/", "x/"]).status == 66)
        #expect(home.unlocked(["mv", "work/", "x"]).status == 64)
        #expect(home.unlocked(["mv", "nope", "x"]).status == 66)
        #expect(home.vaultBytes() == before)
    }
}

@Suite("attachments")
struct AttachmentCLITests {
    @Test func binaryRoundTripWithAPrivateOutputFile() throws {
        let home = verbsHome()
        var bytes = [UInt8](0...255) + [0, 0, 10, 13, 0xff, 0xfe]
        for i in 0..<4000 { bytes.append(UInt8(truncatingIfNeeded: i &* 7919)) }
        let input = home.path("id_ed25519")
        FileManager.default.createFile(atPath: input, contents: Data(bytes))
        let r = home.unlocked(["attach", "personal/github", input])
        #expect(r.status == 0, "\(r)")
        let show = home.unlocked(["show", "personal/github"]).stdout
        #expect(show.contains("id_ed25519") && show.contains("attachment, 4.2 KiB"), "\(show)")
        let out = home.path("restored")
        let get = home.unlocked(["get", "personal/github", "--field", "id_ed25519", "--out", out])
        #expect(get.status == 0, "\(get)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(bytes))
        var st = stat()
        #expect(stat(out, &st) == 0 && st.st_mode & 0o777 == 0o600)
        // Piped stdout gets the exact bytes too.
        let piped = home.unlocked(["get", "personal/github", "--field", "id_ed25519"])
        #expect(piped.status == 0)
        #expect(home.unlocked(["get", "personal/github", "--field", "id_ed25519", "--json"]).status == 64)
        // --as names the field; it survives a bundle round trip (synced like every field).
        #expect(home.unlocked(["attach", "work/db", input, "--as", "ssh-key"]).status == 0)
        let bundle = home.path("b.coffer")
        #expect(home.unlocked(["export", "--out", bundle]).status == 0)
        let other = TestHome()
        #expect(other.run(["clone", bundle, "--passphrase-fd", "3"], fd3: home.passphrase + "\n").status == 0)
        let out2 = home.path("restored2")
        #expect(other.unlocked(["get", "work/db", "--field", "ssh-key", "--out", out2]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out2)) == Data(bytes))
    }

    @Test func limitsAndBadFiles() throws {
        let home = verbsHome()
        let big = home.path("big")
        FileManager.default.createFile(atPath: big, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
        try h.truncate(atOffset: 16 * 1024 * 1024 + 1)
        try h.close()
        let before = home.vaultBytes()
        let r = home.unlocked(["attach", "work/db", big])
        #expect(r.status == 64)
        #expect(r.stderr.contains("16 MiB"), "\(r)")
        let missing = home.unlocked(["attach", "work/db", home.path("nope")])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("nope"))
        #expect(home.unlocked(["attach", "work/db", home.root.path]).status == 64, "a folder")
        #expect(home.unlocked(["attach", "nope", big]).status == 64 || home.unlocked(["attach", "nope", big]).status == 66)
        #expect(home.unlocked(["get", "work/db", "--field", "nothing", "--out", home.path("x")]).status == 66)
        #expect(!FileManager.default.fileExists(atPath: home.path("x")))
        #expect(home.vaultBytes() == before)
    }
}

@Suite("coffer edit in $EDITOR")
struct EditorCLITests {
    /// An EDITOR script: runs `sed` expressions on the file, or fails.
    /// An EDITOR value running `script` on the file. Through `/bin/sh
    /// PATH`, not by executing the file: another test's fork may still hold
    /// the just-written file open, and exec would then fail with ETXTBSY.
    func editor(_ home: TestHome, _ script: String) -> String {
        let path = home.path("editor-\(UUID().uuidString.prefix(6)).sh")
        FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n\(script)\n".utf8))
        return "/bin/sh " + path
    }

    @Test func changesOnlyWhatWasEdited() throws {
        let home = verbsHome()
        // The script also records the file's and folder's modes.
        let ed = editor(
            home,
            """
            stat -c %a "$1" > \(home.path("mode")); stat -c %a "$(dirname "$1")" >> \(home.path("mode"))
            cp "$1" \(home.path("seen"))
            sed -i -e '1s/.*/n3w-PASS/' -e 's/^url: .*/url: https:\\/\\/example.org/' -e '$a\\
            \\
            my notes' "$1"
            """)
        let r = home.unlocked(["edit", "personal/github"], env: ["EDITOR": ed, "VISUAL": ""])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("updated personal/github: notes, password, url"), "\(r)")
        let seen = try String(contentsOfFile: home.path("seen"), encoding: .utf8)
        #expect(seen.hasPrefix("hunter2-SECRET\nusername: octo\nurl: https://github.com\ntotp: otpauth://"), "\(seen)")
        #expect(try String(contentsOfFile: home.path("mode"), encoding: .utf8) == "600\n700\n")
        #expect(home.unlocked(["get", "personal/github"]).out == "n3w-PASS")
        #expect(home.unlocked(["get", "personal/github", "--field", "url"]).out == "https://example.org")
        #expect(home.unlocked(["get", "personal/github", "--field", "notes"]).out == "my notes")
        // The file and its folder are gone.
        let left = try FileManager.default.contentsOfDirectory(atPath: home.environment["XDG_RUNTIME_DIR"]!)
        #expect(!left.contains { $0.hasPrefix("coffer-edit") }, "\(left)")
        // History shows ordinary field writes: the username was not rewritten.
        let history = home.unlocked(["history", "personal/github", "--json"]).stdout
        let entries = try #require(jsonObject(history) as? [[String: Any]])
        #expect(entries.filter { $0["field"] as? String == "username" }.count == 1)
    }

    @Test func failingEditorOrBadTextLeavesTheVault() {
        let home = verbsHome()
        let before = home.vaultBytes()
        let fail = home.unlocked(["edit", "personal/github"], env: ["EDITOR": editor(home, "echo x > \"$1\"; exit 3")])
        #expect(fail.status == 64)
        #expect(fail.stderr.contains("exited with status 3"), "\(fail)")
        let bad = home.unlocked(["edit", "personal/github"], env: ["EDITOR": editor(home, "sed -i '2s/: / /' \"$1\"")])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("line 2:"), "\(bad)")
        let same = home.unlocked(["edit", "personal/github"], env: ["EDITOR": "true"])
        #expect(same.status == 0)
        #expect(same.stderr.contains("no changes"))
        #expect(home.vaultBytes() == before)
    }

    @Test func refusesASharedTmpUnlessAsked() {
        let home = verbsHome()
        var env = home.environment
        env["XDG_RUNTIME_DIR"] = nil
        home.environment = env
        let before = home.vaultBytes()
        let r = home.unlocked(["edit", "personal/github"], env: ["EDITOR": "true"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--unsafe-tmp"), "\(r)")
        let tmp = home.path("tmp")
        try? FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        let ok = home.unlocked(
            ["edit", "personal/github", "--unsafe-tmp"], env: ["EDITOR": editor(home, "sed -i 's/^username: .*/username: cat/' \"$1\""), "TMPDIR": tmp])
        #expect(ok.status == 0, "\(ok)")
        #expect(home.unlocked(["get", "personal/github", "--field", "username"]).out == "cat")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: tmp))?.isEmpty == true)
        _ = before
    }
}

@Suite("completion of item and field names")
struct CompletionCLITests {
    func session(_ home: TestHome) throws -> String {
        let r = home.unlocked(["unlock", "--shell", "sh"])
        let prefix = "export COFFER_SESSION='"
        guard r.out.hasPrefix(prefix) else { throw CompletionFailure("no session: \(r)") }
        return String(r.out.dropFirst(prefix.count).dropLast(2))
    }
    struct CompletionFailure: Error {
        var m: String
        init(_ m: String) { self.m = m }
    }

    @Test func bashCompletesNamesAndFieldsWithASession() throws {
        let home = verbsHome()
        let token = try session(home)
        let script = home.path("coffer.bash")
        let gen = home.run(["--generate-completion-script", "bash"])
        #expect(gen.status == 0)
        FileManager.default.createFile(atPath: script, contents: Data(gen.stdout.utf8))
        func complete(_ line: String, session: String?) -> [String] {
            var words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            words[0] = CofferBinary.path
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let full = words.joined(separator: " ")
            let sh = """
                source '\(script)'
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMP_LINE='\(full)'; COMP_POINT=${#COMP_LINE}
                _coffer "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            var env = home.environment
            env["COFFER_SESSION"] = session
            let r = Spawn.run("/usr/bin/env", ["bash", "-c", sh], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
            return r.stdout.split(separator: "\n").map(String.init)
        }
        #expect(complete("coffer show ", session: token) == ["personal/", "work/"])
        #expect(complete("coffer get work/", session: token) == ["work/db", "work/openai"])
        #expect(complete("coffer get personal/github --field ", session: token).sorted() == ["password", "totp", "url", "username"])
        #expect(complete("coffer show ", session: nil).isEmpty, "silent without a session")
        #expect(complete("coffer show ", session: "garbage").isEmpty)
    }

    @Test func theCompletionHookIsSilentWithoutASession() {
        let home = verbsHome()
        let r = home.run(["---completion", "show", "--", "positional@0", "2", "0", "coffer", "show", ""])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.isEmpty && r.stderr.isEmpty)
    }
}

@Suite("daily verbs with a shell session (fast path)")
struct VerbsSessionCLITests {
    @Test func showAndOtpWithOnlyASessionMatchThePassphrasePath() throws {
        let home = verbsHome()
        let r = home.unlocked(["unlock", "--shell", "sh"])
        let prefix = "export COFFER_SESSION='"
        #expect(r.out.hasPrefix(prefix), "\(r)")
        let token = String(r.out.dropFirst(prefix.count).dropLast(2))
        let env = ["COFFER_SESSION": token]
        let fast = home.run(["show", "personal/github"], env: env)
        #expect(fast.status == 0, "\(fast)")
        #expect(fast.stdout == home.unlocked(["show", "personal/github"]).stdout)
        let otp = home.run(["otp", "personal/github"], env: env)
        #expect(otp.status == 0 && otp.out.count == 6 && otp.out.allSatisfy(\.isNumber), "\(otp)")
        #expect(home.run(["show", "nope"], env: env).status == 66)
        #expect(home.run(["otp", "work/openai"], env: env).status == 66)
        let clip = home.run(["clip", "personal/github"], env: env)
        #expect(clip.status == 66, "no display in the test environment: \(clip)")
    }
}
