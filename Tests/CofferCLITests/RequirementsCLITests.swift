import CofferTestSupport
import Foundation
import Testing

/// The manifest from issue 7, plus one optional api-key source.
private let manifest = """
    {"version": 1,
     "sources": [
       {"id": "ads", "name": "NASA ADS", "type": "api-key", "required": true,
        "registrationURL": "https://ui.adsabs.harvard.edu/user/settings/token",
        "description": "ADS requires an API key.", "unavailableWithout": ["Search"],
        "format": {"prefix": "", "minLength": 20, "pattern": "^[A-Za-z0-9]+$"}},
       {"id": "crossref", "name": "Crossref", "type": "email", "required": false,
        "description": "Polite-pool access with an email."}]}
    """

private let goodKey = "abcdefghij0123456789XYZ"

extension TestHome {
    /// Writes `text` to a file in the sandbox and returns its path.
    func write(_ name: String, _ text: String) -> String {
        let p = path(name)
        _ = FileManager.default.createFile(atPath: p, contents: Data(text.utf8))
        return p
    }
}

@Suite("coffer check and requirements, black-box")
struct RequirementsCLITests {
    @Test func checkReportsMissingThenReady() throws {
        let home = TestHome()
        home.initVault()
        let req = home.write("req.json", manifest)
        let missing = home.unlocked(["check", "--requirements", req])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stdout.contains("missing  ads"))
        #expect(missing.stdout.contains("get one at https://ui.adsabs.harvard.edu/user/settings/token"))
        #expect(missing.stdout.contains("unavailable without it: Search"))
        #expect(missing.stderr.contains("1 required source is not ready: ads (missing)"))

        #expect(home.unlocked(["add", "ads", "--source", "ads"], stdin: goodKey).status == 0)
        let ready = home.unlocked(["check", "--requirements", req])
        #expect(ready.status == 0, "\(ready)")
        #expect(ready.stdout.contains("ready    ads"))
        #expect(ready.stdout.contains("missing  crossref"), "optional sources are reported but do not fail")
        // --all makes optional sources count.
        #expect(home.unlocked(["check", "--requirements", req, "--all"]).status == 1)
        #expect(home.unlocked(["add", "me", "--type", "email", "--field", "email=me@example.org", "--source", "crossref"]).status == 0)
        #expect(home.unlocked(["check", "--requirements", req, "--all"]).status == 0)
    }

    @Test func checkReportsInvalidAndExpiredAsJSON() throws {
        let home = TestHome()
        home.initVault()
        let req = home.write("req.json", manifest)
        #expect(home.unlocked(["add", "ads", "--source", "ads", "--force"], stdin: "bad-key!").status == 0)
        var r = home.unlocked(["check", "--requirements", req, "--json"])
        #expect(r.status == 1)
        SchemaValidation.expectValid(r.stdout, schema: "check.schema.json")
        var json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        var sources = try #require(json["sources"] as? [[String: Any]])
        #expect(json["ok"] as? Bool == false)
        #expect(sources[0]["status"] as? String == "invalid")
        #expect(sources[0]["items"] as? [String] == ["ads"])
        let problems = (sources[0]["problems"] as? [String]) ?? []
        #expect(problems.contains { $0.contains("shorter than the minimum 20") })
        #expect(!r.stdout.contains("bad-key!"), "a value never appears in check output")

        #expect(home.unlocked(["edit", "ads", "--secret", "key", "--expires", "2020-01-01"], stdin: goodKey).status == 0)
        r = home.unlocked(["check", "--requirements", req, "--json"])
        #expect(r.status == 1)
        SchemaValidation.expectValid(r.stdout, schema: "check.schema.json")
        json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        sources = try #require(json["sources"] as? [[String: Any]])
        #expect(sources[0]["status"] as? String == "expired")
        #expect(sources[0]["expires"] as? String == "2020-01-01")
        #expect((json["counts"] as? [String: Int])?["expired"] == 1)

        #expect(home.unlocked(["edit", "ads", "--no-expires"]).status == 0)
        r = home.unlocked(["check", "--requirements", req, "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "check.schema.json")
        json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == true)
        #expect((json["counts"] as? [String: Int]) == ["ready": 1, "missing": 1, "invalid": 0, "expired": 0])
    }

    @Test func badManifestsAndUsage() {
        let home = TestHome()
        home.initVault()
        let bad = home.write("bad.json", #"{"version": 1, "sources": [{"id": "x", "type": "api-key", "format": {"minLength": "3"}}]}"#)
        var r = home.unlocked(["check", "--requirements", bad])
        #expect(r.status == 65)
        #expect(r.stderr.contains("bad.json: at $.sources[0].format.minLength: expected a non-negative integer, found a string"), "\(r)")
        r = home.unlocked(["check", "--requirements", home.write("notjson.json", "{nope")])
        #expect(r.status == 65 && r.stderr.contains("notjson.json: not valid JSON"), "\(r)")
        r = home.unlocked(["check", "--requirements", home.path("absent.json")])
        #expect(r.status == 66 && r.stderr.contains("absent.json"), "\(r)")
        r = home.unlocked(["check"])
        #expect(r.status == 64 && r.stderr.contains("no requirements manifest"), "\(r)")
        // A malformed manifest is caught before the vault is opened.
        r = home.run(["check", "--requirements", bad])
        #expect(r.status == 65)
        // A locked vault is 77, not the not-ready 1.
        r = home.run(["check", "--requirements", home.write("req.json", manifest)])
        #expect(r.status == 77)
    }

    @Test func theExampleManifestMatchesItsSchema() {
        SchemaValidation.expectValid(manifest, schema: "requirements.schema.json")
    }

    @Test func addRefusesAValueThatFailsItsRule() {
        let home = TestHome()
        home.initVault()
        let req = home.write("req.json", manifest)
        let before = home.vaultBytes()
        var r = home.unlocked(["add", "ads", "--source", "ads", "--requirements", home.path("absent.json")], stdin: goodKey)
        #expect(r.status == 66 && r.stderr.contains("absent.json"), "\(r)")
        r = home.unlocked(["add", "ads", "--source", "ads", "--requirements", req], stdin: "too-short")
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("fails the format rule of source 'ads'"))
        #expect(r.stderr.contains("--force"))
        #expect(!r.stderr.contains("too-short"), "the value never appears in a message")
        #expect(home.vaultBytes() == before, "vault unchanged")
        r = home.unlocked(["add", "ads", "--source", "ads", "--requirements", req, "--force"], stdin: "too-short")
        #expect(r.status == 0 && r.stderr.contains("storing it anyway"), "\(r)")

        // edit checks new values too, and a change of source re-checks.
        let before2 = home.vaultBytes()
        r = home.unlocked(["edit", "ads", "--secret", "key", "--requirements", req], stdin: "still-short")
        #expect(r.status == 65, "\(r)")
        #expect(home.vaultBytes() == before2)
        #expect(home.unlocked(["edit", "ads", "--secret", "key", "--requirements", req], stdin: goodKey).status == 0)
        #expect(home.unlocked(["add", "other", "--source", "x"], stdin: "short").status == 0)
        r = home.unlocked(["edit", "other", "--source", "ads", "--requirements", req])
        #expect(r.status == 65, "\(r)")
        // Tag edits of an item do not re-check its value.
        #expect(home.unlocked(["edit", "other", "--tag", "t", "--requirements", req]).status == 0)
    }

    @Test func registeredManifestsDriveValidationAndCheck() {
        let home = TestHome()
        home.initVault()
        let req = home.write("app.json", manifest)
        var r = home.unlocked(["requirements", "add", req])
        #expect(r.status == 0 && r.stderr.contains("registered requirements 'app' (2 sources)"), "\(r)")
        r = home.unlocked(["requirements", "ls"])
        #expect(r.stdout == "app  2 sources: ads, crossref\n", "\(r)")
        #expect(home.unlocked(["ls"]).stdout == "", "registered manifests are hidden from ls")
        #expect(home.unlocked(["requirements", "show", "app"]).stdout.contains("NASA ADS"))
        // add --source uses the registered rule.
        r = home.unlocked(["add", "ads", "--source", "ads"], stdin: "short")
        #expect(r.status == 65, "\(r)")
        // check without --requirements uses the registered manifests.
        r = home.unlocked(["check", "--json"])
        #expect(r.status == 1)
        SchemaValidation.expectValid(r.stdout, schema: "check.schema.json")
        #expect(r.stdout.contains("registered:app"))
        #expect(home.unlocked(["add", "ads", "--source", "ads"], stdin: goodKey).status == 0)
        #expect(home.unlocked(["check"]).status == 0)
        // Names under .coffer/ are reserved.
        r = home.unlocked(["add", ".coffer/requirements/evil", "--type", "note"], stdin: "x")
        #expect(r.status == 64, "\(r)")
        // A malformed manifest is not registered; the vault is unchanged.
        let before = home.vaultBytes()
        r = home.unlocked(["requirements", "add", home.write("broken.json", #"{"version": 1, "sources": [{"id": 1, "type": "email"}]}"#)])
        #expect(r.status == 65 && r.stderr.contains("broken.json: at $.sources[0].id: expected a string, found a number"), "\(r)")
        r = home.unlocked(["requirements", "add", req, "--name", "bad name"])
        #expect(r.status == 64, "\(r)")
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["requirements", "show", "nope"]).status == 66)
        #expect(home.unlocked(["requirements", "rm", "app"]).status == 0)
        #expect(home.unlocked(["requirements", "ls"]).stdout == "")
        #expect(home.unlocked(["requirements", "rm", "app"]).status == 66)
    }

    @Test func catalogueWarnsWithoutAManifest() {
        let home = TestHome()
        home.initVault()
        let anthropic = "sk-ant-api03-" + String(repeating: "x", count: 95)
        let r = home.unlocked(["add", "oai", "--source", "openai"], stdin: "\"" + anthropic + "\"")
        #expect(r.status == 0, "warnings do not refuse")
        #expect(r.stderr.contains("wrapped in quotes"))
        #expect(r.stderr.contains("looks like an Anthropic API key"))
        #expect(!r.stderr.contains(anthropic))
        let clean = home.unlocked(["add", "ant", "--source", "anthropic"], stdin: anthropic)
        #expect(!clean.stderr.contains("warning"), "\(clean)")
    }

    @Test func lsExpiredAndExpiring() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "old", "--expires", "2020-01-01"], stdin: "k1").status == 0)
        #expect(home.unlocked(["add", "soon", "--expires", "10d"], stdin: "k2").status == 0)
        #expect(home.unlocked(["add", "later", "--expires", "1y"], stdin: "k3").status == 0)
        #expect(home.unlocked(["add", "never"], stdin: "k4").status == 0)
        func names(_ args: [String]) -> [String] {
            home.unlocked(["ls"] + args).stdout.split(separator: "\n").map { String($0.split(separator: " ")[0]) }
        }
        #expect(names(["--expired"]) == ["old"])
        #expect(names(["--expiring", "30d"]) == ["old", "soon"])
        #expect(names(["--expiring", "2y"]) == ["later", "old", "soon"])
        let json = home.unlocked(["ls", "--expired", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "ls.schema.json")
        #expect(json.stdout.contains("\"old\""))
        let bad = home.unlocked(["ls", "--expiring", "soon"])
        #expect(bad.status == 64 && bad.stderr.contains("--expiring"))
        // Reading an expired credential warns on stderr, prints the value.
        let get = home.unlocked(["get", "old"])
        #expect(get.status == 0 && get.stdout == "k1\n")
        #expect(get.stderr.contains("expired on 2020-01-01"))
        #expect(!home.unlocked(["get", "soon"]).stderr.contains("expired"))
    }

    @Test func localOnlyPolicyPersistsAcrossEditsAndSwitchesExplicitly() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "device", "--local-only"], stdin: "k1").status == 0)
        #expect(home.unlocked(["ls"]).stdout.contains("local-only"))
        // Edits that do not mention the policy keep it.
        #expect(home.unlocked(["edit", "device", "--secret", "key"], stdin: "k2").status == 0)
        #expect(home.unlocked(["edit", "device", "--rename", "device2", "--tag", "t", "--expires", "30d"]).status == 0)
        var ls = home.unlocked(["ls", "--json"])
        #expect(ls.stdout.contains("\"policy\" : \"local-only\""), "\(ls)")
        #expect(home.unlocked(["get", "device2", "--json"]).stdout.contains("\"policy\" : \"local-only\""))
        // Switching is explicit, and says what it means.
        var r = home.unlocked(["edit", "device2", "--policy", "sync"])
        #expect(r.status == 0 && r.stderr.contains("now syncs"), "\(r)")
        ls = home.unlocked(["ls"])
        #expect(!ls.stdout.contains("local-only"))
        r = home.unlocked(["edit", "device2", "--policy", "local-only"])
        #expect(r.status == 0 && r.stderr.contains("is now local-only"), "\(r)")
        #expect(home.unlocked(["ls"]).stdout.contains("local-only"))
        r = home.unlocked(["edit", "device2", "--policy", "nearby"])
        #expect(r.status == 64)
    }
}

/// The example program (Examples/KeychainApp) reads its key through
/// CofferKit's front door. It is built with the package; the test
/// is skipped if this build did not produce it.
@Suite("coffer-example, black-box", .enabled(if: FileManager.default.isExecutableFile(atPath: ExampleBinary.path)))
struct ExampleProgramTests {
    @Test func readsTheKeyThroughCofferKit() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "ads", "--source", "ads"], stdin: goodKey).status == 0)
        var env = home.environment
        env["COFFER_PASSPHRASE"] = home.passphrase
        var r = Spawn.run(ExampleBinary.path, ["ads", "--print"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 0 && r.stdout == goodKey + "\n", "\(r)")
        r = Spawn.run(
            ExampleBinary.path, ["ads", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 0 && r.stdout.contains("abcd… (23 characters, from 'ads')"), "\(r)")
        r = Spawn.run(ExampleBinary.path, ["nope"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 66 && r.stderr.contains("no API key stored for source 'nope'"), "\(r)")
        env["COFFER_PASSPHRASE"] = "wrong"
        r = Spawn.run(ExampleBinary.path, ["ads"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 77, "\(r)")
    }
}

enum ExampleBinary {
    static let path = URL(fileURLWithPath: CofferBinary.path).deletingLastPathComponent().appendingPathComponent("coffer-example").path
}
