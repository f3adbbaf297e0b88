import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A small HIBP file (HASH:COUNT, sorted, CRLF) holding these passwords and
/// some filler, written with sha1sum so the test does not share code with
/// the reader it tests.
func writeHIBPFile(_ home: TestHome, name: String = "pwned.txt", passwords: [(String, Int)]) -> String {
    var lines: [String] = []
    for (p, n) in passwords + (0..<300).map({ ("filler-\($0)", $0 + 1) }) {
        let r = Spawn.run("/bin/sh", ["-c", "printf %s \"$1\" | sha1sum", "sh", p], stdin: nil, fd3: nil, environment: ["PATH": "/usr/bin:/bin"], workDir: "/")
        lines.append(String(r.stdout.prefix(40)).uppercased() + ":\(n)")
    }
    let path = home.path(name)
    FileManager.default.createFile(atPath: path, contents: Data((lines.sorted().joined(separator: "\r\n") + "\r\n").utf8))
    return path
}

/// `coffer audit`, black-box (docs/audit.md).
@Suite("coffer audit")
struct AuditCLITests {
    static func homeWithItems() -> TestHome {
        let home = TestHome()
        home.initVault()
        for (name, type, secret, extra) in [
            ("web/weak", "login", "Password1!", ["--field", "username=me"]),
            ("web/a", "login", "J7d-Rk2p-Xm9q-Lt4w", ["--field", "username=me"]),
            ("api/k", "api-key", "J7d-Rk2p-Xm9q-Lt4w", ["--expires", "2020-01-01"]),
            ("api/fine", "api-key", "sk-live-Vq8mZ2rT6kW4pL9xQ3nB7yH1", []),
            ("notes/n", "note", "1234", []),
        ] {
            let r = home.unlocked(["add", name, "--type", type] + extra, stdin: secret + "\n")
            precondition(r.status == 0, "\(r)")
        }
        return home
    }

    @Test func tableNamesIssuesNeverValues() {
        let home = Self.homeWithItems()
        let hibp = writeHIBPFile(home, passwords: [("Password1!", 52_256)])
        let r = home.unlocked(["audit", "--hibp-file", hibp])
        #expect(r.status == 0, "\(r)")
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("ITEM") == true)
        #expect(lines.contains { $0.hasPrefix("web/weak") && $0.contains("weak") && $0.contains("password: estimated 10 bits") })
        #expect(lines.contains { $0.hasPrefix("web/weak") && $0.contains("breached") && $0.contains("52256 times") })
        #expect(lines.contains { $0.hasPrefix("web/a") && $0.contains("reused") && $0.contains("api/k (key)") })
        #expect(lines.contains { $0.hasPrefix("api/k") && $0.contains("expired") && $0.contains("2020-01-01") })
        #expect(!r.out.contains("api/fine") && !r.out.contains("notes/n"))
        for secret in ["Password1!", "J7d-Rk2p", "sk-live", "1234"] {
            #expect(!r.stdout.contains(secret) && !r.stderr.contains(secret))
        }
        #expect(r.stderr.contains("5 issues in 3 of 5 items"), "\(r.stderr)")
    }

    @Test func failOnGatesTheExitStatus() {
        let home = Self.homeWithItems()
        #expect(home.unlocked(["audit"]).status == 0)
        #expect(home.unlocked(["audit", "--fail-on", "weak"]).status == 1)
        #expect(home.unlocked(["audit", "--fail-on", "old"]).status == 0)
        #expect(home.unlocked(["audit", "--fail-on", "old,expiring"]).status == 0)
        #expect(home.unlocked(["audit", "--fail-on", "all"]).status == 1)
        // Only the selected items count: api/fine has no issue.
        #expect(home.unlocked(["audit", "api/fine", "--fail-on", "all"]).status == 0)
        #expect(home.unlocked(["audit", "api", "--fail-on", "expired"]).status == 1)
        #expect(home.unlocked(["audit", "--fail-on", "weak", "--min-bits", "5"]).status == 0)
        #expect(home.unlocked(["audit", "--fail-on", "old", "--older-than", "0d"]).status == 0) // written today
    }

    @Test func jsonMatchesItsSchema() throws {
        let home = Self.homeWithItems()
        let hibp = writeHIBPFile(home, passwords: [("Password1!", 7)])
        let r = home.unlocked(["audit", "--json", "--hibp-file", hibp, "--fail-on", "breached", "--expiring", "9999d"])
        #expect(r.status == 1, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "audit.schema.json")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["ok"] as? Bool == false)
        let counts = try #require(o["counts"] as? [String: Int])
        #expect(counts == ["weak": 1, "reused": 2, "expired": 1, "expiring": 0, "old": 0, "breached": 1])
        let groups = try #require(o["reusedGroups"] as? [[[String: String]]])
        #expect(groups == [[["item": "api/k", "field": "key"], ["item": "web/a", "field": "password"]]])
        #expect(!r.stdout.contains("Password1!") && !r.stdout.contains("J7d-Rk2p"))
        // An empty vault: valid too, ok.
        let empty = TestHome()
        empty.initVault()
        let e = empty.unlocked(["audit", "--json", "--fail-on", "all", "--hibp-file", writeHIBPFile(empty, passwords: [])])
        #expect(e.status == 0, "\(e)")
        SchemaValidation.expectValid(e.stdout, schema: "audit.schema.json")
    }

    @Test func badInputIsOneClearLineAndNoPrompt() {
        let home = Self.homeWithItems()
        let before = home.vaultBytes()
        let garbage = home.path("garbage.txt")
        FileManager.default.createFile(atPath: garbage, contents: Data("this is not a hash list\n".utf8))
        let ntlm = home.path("ntlm.txt")
        FileManager.default.createFile(atPath: ntlm, contents: Data("8846F7EAEE8FB117AD06BDD830B7586C:10\r\n".utf8))
        let empty = home.path("empty.txt")
        FileManager.default.createFile(atPath: empty, contents: Data())
        let cases: [([String], Int32, String)] = [
            (["--fail-on", "weak,bogus"], 64, "unknown issue 'bogus'"),
            (["--fail-on", "breached"], 64, "needs a breach source"),
            (["--min-bits", "lots"], 64, "invalid --min-bits"),
            (["--expiring", "soon"], 64, "invalid --expiring"),
            (["--older-than", "1x"], 64, "invalid --older-than"),
            (["--hibp-file", home.path("missing.txt")], 66, "does not exist"),
            (["--hibp-file", home.root.path], 66, "not a regular file"),
            (["--hibp-file", garbage], 65, "is malformed"),
            (["--hibp-file", ntlm], 65, "NTLM"),
            (["--hibp-file", empty], 65, "is empty"),
            (["a//b"], 64, "invalid item name"),
        ]
        for (args, code, text) in cases {
            // No passphrase given: the argument is refused before any unlock.
            let r = home.run(["audit"] + args)
            #expect(r.status == code, "\(args): \(r)")
            let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }
            #expect(errors.count == 1 && errors[0].contains(text), "\(args): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
        #expect(home.vaultBytes() == before)
    }
}
