import CofferTestSupport
import Foundation
import Testing

/// Issue 25 items 3 and 4, driven as a user would: real exports of other
/// programs imported, then read back with `coffer get` and `coffer otp`.
@Suite struct ImportFidelityCLITests {
    static func fixture(_ name: String) -> String { InterchangeCLITests.fixture(name) }

    func get(_ home: TestHome, _ name: String, _ field: String) -> String? {
        let r = home.unlocked(["get", name, "--field", field])
        return r.status == 0 ? r.out : nil
    }

    @Test func keepassXCExportOfAKDBX4DatabaseWithAttachments() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["import", "--from", "keepass-xml", Self.fixture("keepassxc-2.7.4-kdbx41-export.xml")])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("2 added"), "\(r)")
        #expect(
            r.stderr.contains(
                "coffer: warning: 'Work/Mail': attachments 'f', 'g' were not imported: the XML refers to their bytes but does not hold them"), "\(r)")
        #expect(r.stderr.contains("'Scan': attachment 'scan.pdf' was not imported"), "\(r)")
        #expect(r.stderr.contains("import the .kdbx instead (coffer import --from kdbx)"))
        let warnings = r.stderr.split(separator: "\n").filter { $0.contains("not imported") }
        #expect(warnings.count == 2, "\(r)")
        #expect(get(home, "Work/Mail", "username") == "alice" && get(home, "Scan", "username") == "bob")
    }

    @Test func otpWorksOnEveryKeePassTOTPLayout() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["import", "--from", "keepass-xml", Self.fixture("keepass-totp-layouts.xml")])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("'Broken seed': its TOTP cannot be read ('TOTP Seed' is not base32)"), "\(r)")
        #expect(!r.stderr.contains("not base32!"))
        let expected = [
            ("otp URI", "94287082"), ("KeeOTP", "8920136"), ("Seed and settings", "287082"), ("Steam", "PV9M4"),
            ("TimeOtp Base32", "84755224"), ("TimeOtp Hex", "46119246"), ("TimeOtp Base64", "90693936"), ("TimeOtp UTF-8", "94287082"),
        ]
        for (name, code) in expected {
            let otp = home.unlocked(["otp", name, "--at", "59"])
            #expect(otp.status == 0 && otp.out == code, "\(name): \(otp)")
        }
        let json = home.unlocked(["otp", "Steam", "--at", "59", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "otp.schema.json")
        #expect(json.stdout.contains("\"digits\":5") || json.stdout.contains("\"digits\" : 5"), "\(json)")
        #expect(home.unlocked(["otp", "Broken seed"]).status == 66)
        // Empty custom strings arrive as empty fields.
        #expect(home.unlocked(["get", "Empty custom", "--field", "security question"]).status == 0)
        #expect(get(home, "Empty custom", "security question") == "")
    }
}

extension ImportFidelityCLITests {
    @Test func emptyCustomFieldsSurviveKeePassXMLBothWays() {
        let home = TestHome()
        home.initVault()
        let add = home.unlocked(["add", "site", "--type", "login", "--field", "username=al", "--field", "answer=", "--field", "hint="], stdin: "pw")
        #expect(add.status == 0, "\(add)")
        let file = home.path("out.xml")
        let out = home.unlocked(["export", "--format", "keepass-xml", "--plaintext", "--out", file])
        #expect(out.status == 0, "\(out)")
        let xml = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        #expect(xml.contains("<Key>answer</Key>") && xml.contains("<Key>hint</Key>"), "\(xml)")
        let other = TestHome()
        other.initVault()
        let back = other.unlocked(["import", "--from", "keepass-xml", file])
        #expect(back.status == 0, "\(back)")
        #expect(get(other, "site", "answer") == "" && get(other, "site", "hint") == "" && get(other, "site", "username") == "al")
    }
}

extension ImportFidelityCLITests {
    /// KeePass XML, like kdbx, puts an api-key's key in Password (KeePass
    /// users expect the secret there) and keeps the type in `CofferType`;
    /// coffer reads both back as the same api-key.
    @Test func anAPIKeyIsThePasswordInKeePassXMLAndComesBackAsItself() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "api/openai", "--type", "api-key", "--field", "account=a1"], stdin: "sk-123").status == 0)
        let file = home.path("out.xml")
        let out = home.unlocked(["export", "--format", "keepass-xml", "--plaintext", "--out", file])
        #expect(out.status == 0, "\(out)")
        let xml = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        let compact = xml.replacingOccurrences(of: "\t", with: "").replacingOccurrences(of: "\n", with: "")
        #expect(compact.contains("<Key>Password</Key><Value ProtectInMemory=\"True\">sk-123</Value>"), "\(xml)")
        #expect(compact.contains("<Key>CofferType</Key><Value>api-key</Value>"), "\(xml)")
        let other = TestHome()
        other.initVault()
        let back = other.unlocked(["import", "--from", "keepass-xml", file])
        #expect(back.status == 0, "\(back)")
        #expect(get(other, "api/openai", "key") == "sk-123")
        #expect(get(other, "api/openai", "account") == "a1")
        let show = other.unlocked(["show", "api/openai", "--json"])
        #expect(show.stdout.contains("\"api-key\""), "\(show)")
        #expect(!show.stdout.contains("CofferType"), "\(show)")
    }
}

extension ImportFidelityCLITests {
    @Test func lenientSkipsNamedLinesAndIsCSVOnly() {
        let home = TestHome()
        home.initVault()
        let file = Self.fixture("csv-bad-rows.csv")
        let before = home.vaultBytes()
        let strict = home.unlocked(["import", "--from", "csv", file])
        #expect(strict.status == 65 && strict.stderr.contains("line 3: 7 columns, but the header has 5"), "\(strict)")
        #expect(strict.stderr.contains("coffer: hint: fix that line, or add --lenient"), "\(strict)")
        #expect(home.vaultBytes() == before)
        let r = home.unlocked(["import", "--from", "csv", "--lenient", file])
        #expect(r.status == 0 && r.stderr.contains("2 added"), "\(r)")
        #expect(r.stderr.contains("coffer: warning: \(file): line 3: 7 columns, but the header has 5: this line was skipped (--lenient)"), "\(r)")
        #expect(r.stderr.contains("line 4: 2 columns, but the header has 5: this line was skipped"), "\(r)")
        #expect(!r.stderr.contains("x-pass"))
        let usage = home.unlocked(["import", "--from", "bitwarden-json", "--lenient", Self.fixture("bitwarden.json")])
        #expect(usage.status == 64 && usage.stderr.contains("--lenient applies only to --from csv"), "\(usage)")
    }
}

/// `coffer export --format pass` refusals that need no gpg key.
@Suite struct PassExportCLITests {
    @Test func refusals() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "login"], stdin: "pw").status == 0)
        let junk = home.path("junk")
        try FileManager.default.createDirectory(atPath: junk, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: junk + "/notes.txt", contents: Data("mine".utf8))
        let cases: [([String], Int32, String)] = [
            (["--out", junk, "--gpg-id", "x@y.invalid"], 73, "is not empty and is not a password store (it has no .gpg-id)"),
            (["--out", home.path("new")], 64, "is not a password store yet: say whose key encrypts it"),
            (["--out", home.path("new"), "--gpg-id", "x@y.invalid", "--plaintext"], 64, "--plaintext does not apply"),
            (["--out", "-", "--gpg-id", "x@y.invalid"], 64, "give it with --out DIR"),
            (["--out", home.path("new"), "--gpg-id", "two\nlines"], 64, "is not a key id"),
        ]
        for (args, status, message) in cases {
            let r = home.unlocked(["export", "--format", "pass"] + args)
            #expect(r.status == status && r.stderr.contains(message), "\(args): \(r)")
        }
        let csv = home.unlocked(["export", "--format", "csv", "--plaintext", "--gpg-id", "x", "--out", home.path("x.csv")])
        #expect(csv.status == 64 && csv.stderr.contains("--gpg-id applies only to --format pass"), "\(csv)")
        // No gpg on PATH: exit 69, nothing created.
        let bin = home.path("emptybin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let noGPG = home.unlocked(["export", "--format", "pass", "--out", home.path("s"), "--gpg-id", "x@y.invalid"], env: ["PATH": bin])
        #expect(noGPG.status == 69 && noGPG.stderr.contains("--format pass needs gpg, which is not installed"), "\(noGPG)")
        #expect(!FileManager.default.fileExists(atPath: home.path("s")))
        #expect(FileManager.default.contents(atPath: junk + "/notes.txt") == Data("mine".utf8))
    }
}
