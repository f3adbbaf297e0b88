import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// The manifest from issue 7.
let exampleManifest = """
    {"version": 1,
     "sources": [
       {"id": "ads", "name": "NASA ADS", "type": "api-key", "required": true,
        "registrationURL": "https://ui.adsabs.harvard.edu/user/settings/token",
        "description": "ADS requires an API key.", "unavailableWithout": ["Search"],
        "format": {"prefix": "", "minLength": 20, "pattern": "^[A-Za-z0-9]+$"}},
       {"id": "crossref", "name": "Crossref", "type": "email", "required": false,
        "description": "Polite-pool access with an email."}]}
    """

func parseManifest(_ text: String) throws(CofferError) -> RequirementsManifest {
    try RequirementsManifest.parse(Data(text.utf8), file: "app.json")
}

@Suite("Format rules")
struct FormatRuleTests {
    @Test func prefix() {
        let r = FormatRule(prefixes: ["sk-"])
        #expect(r.accepts("sk-abc"))
        #expect(r.problems(in: "pk-abc") == ["does not start with 'sk-'"])
        let any = FormatRule(prefixes: ["sk_live_", "sk_test_"])
        #expect(any.accepts("sk_test_x") && any.accepts("sk_live_x"))
        #expect(any.problems(in: "rk_x") == ["does not start with 'sk_live_' or 'sk_test_'"])
        #expect(FormatRule(prefixes: [""]).accepts("anything"))
    }

    @Test func lengths() {
        let r = FormatRule(minLength: 5, maxLength: 8)
        #expect(r.accepts("12345") && r.accepts("12345678"))
        #expect(r.problems(in: "1234") == ["is 4 characters long, shorter than the minimum 5"])
        #expect(r.problems(in: "123456789") == ["is 9 characters long, longer than the maximum 8"])
    }

    @Test func pattern() {
        let r = FormatRule(pattern: "^[A-Za-z0-9]+$")
        #expect(r.accepts("abcXYZ019"))
        #expect(r.problems(in: "abc-def") == ["does not match the pattern ^[A-Za-z0-9]+$"])
        // Unanchored like JSON Schema.
        #expect(FormatRule(pattern: "[0-9]").accepts("abc1def"))
    }

    @Test func urlSchemes() {
        let r = FormatRule(urlSchemes: ["http", "https"])
        #expect(r.accepts("http://localhost:11434") && r.accepts("https://example.org/v1"))
        #expect(r.problems(in: "ftp://example.org") == ["is a ftp URL; expected http:// or https://"])
        #expect(r.problems(in: "localhost:11434").count == 1)
        #expect(r.problems(in: "not a url").count == 1)
    }

    @Test func messagesNeverContainTheValue() {
        let secret = "SECRETVALUE123"
        let r = FormatRule(prefixes: ["sk-"], minLength: 40, maxLength: 5, pattern: "^x$", urlSchemes: ["https"])
        let problems = r.problems(in: secret)
        #expect(problems.count == 5)
        #expect(!problems.joined().contains(secret))
    }

    @Test func emailRule() {
        #expect(EmailRule.problems(in: "me@example.org").isEmpty)
        for bad in ["me", "@example.org", "me@example", "me@.org", "me @example.org", "a@b@c.org"] {
            #expect(!EmailRule.problems(in: bad).isEmpty, "\(bad)")
        }
    }

    @Test func requirementAppliesFormatToTheTypesField() {
        let ads = SourceRequirement(id: "ads", type: .apiKey, format: FormatRule(minLength: 20))
        #expect(ads.problems(field: "key", value: "short").count == 1)
        #expect(ads.problems(field: "note", value: "short").isEmpty)
        let both = SourceRequirement(
            id: "x", type: .apiKeyWithEmail, format: FormatRule(prefixes: ["k-"]),
            fieldFormats: ["url": FormatRule(urlSchemes: ["https"])])
        #expect(both.problems(field: "email", value: "nope").count == 1)
        #expect(both.problems(field: "key", value: "k-1").isEmpty)
        #expect(both.problems(field: "url", value: "http://x.org").count == 1)
    }
}

@Suite("Requirements manifests")
struct ManifestParsingTests {
    @Test func parsesTheIssueExample() throws {
        let m = try parseManifest(exampleManifest)
        #expect(m.version == 1 && m.sources.count == 2)
        let ads = try #require(m.source("ads"))
        #expect(ads.name == "NASA ADS" && ads.type == .apiKey && ads.isRequired)
        #expect(ads.registrationURL == "https://ui.adsabs.harvard.edu/user/settings/token")
        #expect(ads.unavailableWithout == ["Search"] && ads.description == "ADS requires an API key.")
        #expect(ads.format == FormatRule(prefixes: [], minLength: 20, pattern: "^[A-Za-z0-9]+$"))
        let crossref = try #require(m.source("crossref"))
        #expect(crossref.type == .email && !crossref.isRequired && crossref.format == nil)
    }

    @Test func parsesExtensions() throws {
        let m = try parseManifest(
            """
            {"version": 1, "name": "ai", "sources": [
              {"id": "ollama", "type": "custom", "fields": {"url": {"urlSchemes": ["http", "https"]}}},
              {"id": "stripe", "type": "api-key", "format": {"prefix": ["sk_live_", "sk_test_"], "maxLength": 200}}]}
            """)
        #expect(m.name == "ai")
        #expect(m.source("ollama")?.fieldFormats["url"]?.urlSchemes == ["http", "https"])
        #expect(m.source("stripe")?.format?.prefixes == ["sk_live_", "sk_test_"])
        #expect(m.source("ollama")?.name == "ollama")
    }

    /// Each malformed manifest: the message names the file, the JSON path
    /// and what was expected; the kind is badData (exit 65).
    @Test(arguments: [
        ("{", "$", "not valid JSON"),
        ("[]", "$", "expected an object, found an array"),
        (#"{"sources": []}"#, "$", "missing required key 'version'"),
        (#"{"version": 2, "sources": []}"#, "$.version", "expected 1, found 2"),
        (#"{"version": "1", "sources": []}"#, "$.version", "expected the integer 1, found a string"),
        (#"{"version": 1, "sources": {}}"#, "$.sources", "expected an array of sources, found an object"),
        (#"{"version": 1, "sources": [], "extra": 1}"#, "$", "unknown key 'extra'"),
        (#"{"version": 1, "sources": [{"type": "api-key"}]}"#, "$.sources[0]", "missing required key 'id'"),
        (#"{"version": 1, "sources": [{"id": "a b", "type": "api-key"}]}"#, "$.sources[0].id", "expected a source id"),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "apikey"}]}"#, "$.sources[0].type",
            "expected one of api-key, email, api-key-with-email, login, custom, found 'apikey'"
        ),
        (#"{"version": 1, "sources": [{"id": "a", "type": "email", "required": "yes"}]}"#, "$.sources[0].required", "expected true or false, found a string"),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "email", "registrationURL": "ftp://x"}]}"#, "$.sources[0].registrationURL",
            "expected an http or https URL"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "email", "unavailableWithout": ["x", 2]}]}"#, "$.sources[0].unavailableWithout[1]",
            "expected a string, found a number"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"minLength": "20"}}]}"#, "$.sources[0].format.minLength",
            "expected a non-negative integer, found a string"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"minLength": -1}}]}"#, "$.sources[0].format.minLength",
            "expected a non-negative integer"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"minLength": 2.5}}]}"#, "$.sources[0].format.minLength",
            "expected a non-negative integer, found a number"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"minLength": 9, "maxLength": 3}}]}"#, "$.sources[0].format.maxLength",
            "at least minLength"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"pattern": "(["}}]}"#, "$.sources[0].format.pattern",
            "expected a valid regular expression"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"prefix": 3}}]}"#, "$.sources[0].format.prefix",
            "expected a string or an array of strings"
        ),
        (#"{"version": 1, "sources": [{"id": "a", "type": "api-key", "format": {"minlength": 3}}]}"#, "$.sources[0].format", "unknown key 'minlength'"),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "custom", "fields": {"url": {"urlSchemes": ["https://"]}}}]}"#,
            "$.sources[0].fields.url.urlSchemes[0]", "expected a URL scheme"
        ),
        (
            #"{"version": 1, "sources": [{"id": "a", "type": "email"}, {"id": "a", "type": "email"}]}"#, "$.sources[1].id",
            "duplicate source id 'a' (also at $.sources[0])"
        ),
    ])
    func malformedManifests(text: String, path: String, expected: String) {
        do {
            _ = try parseManifest(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.kind == .badData && error.exitCode == 65)
            #expect(error.message.hasPrefix("app.json: "), "\(error.message)")
            if path != "$" || expected != "not valid JSON" {
                #expect(error.message.contains("at \(path): "), "\(error.message)")
            }
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test func missingFileIsNotFound() {
        do {
            _ = try RequirementsManifest.load(path: "/nonexistent/req.json")
            Issue.record("loaded")
        } catch {
            #expect(error.kind == .fileNotFound && error.exitCode == 66)
            #expect(error.message.contains("/nonexistent/req.json"))
        }
    }
}

@Suite("Key catalogue")
struct KeyCatalogueTests {
    static let openai = "sk-proj-" + String(repeating: "a1B2", count: 20)
    static let anthropic = "sk-ant-api03-" + String(repeating: "x", count: 95)
    static let openrouter = "sk-or-v1-" + String(repeating: "0f", count: 32)
    static let github = "ghp_" + String(repeating: "A", count: 36)
    static let gitlab = "glpat-" + String(repeating: "z", count: 20)
    static let aws = "AKIA" + String(repeating: "Q", count: 16)
    static let google = "AIza" + String(repeating: "b", count: 35)
    static let stripe = "sk_test_" + String(repeating: "4", count: 24)
    static let slack = "xoxb-" + String(repeating: "1", count: 40)

    @Test(arguments: [
        (openai, "openai"), (anthropic, "anthropic"), (openrouter, "openrouter"), (github, "github"), (gitlab, "gitlab"),
        (aws, "aws"), (google, "google"), (stripe, "stripe"), (slack, "slack"),
    ])
    func wellFormedKeysGetNoWarning(key: String, source: String) {
        #expect(KeyCatalogue.warnings(for: key, source: source) == [])
        #expect(KeyCatalogue.warnings(for: key, source: nil) == [])
    }

    @Test func recognizesTheLongestPrefix() {
        #expect(KeyCatalogue.recognize(Self.anthropic)?.format.provider == "Anthropic")
        #expect(KeyCatalogue.recognize(Self.openrouter)?.format.provider == "OpenRouter")
        #expect(KeyCatalogue.recognize(Self.openai)?.format.provider == "OpenAI")
        #expect(KeyCatalogue.recognize("github_pat_x")?.variant.kind == "fine-grained personal access token")
        #expect(KeyCatalogue.recognize("plainvalue") == nil)
    }

    @Test func pasteMistakes() {
        func warns(_ value: String, _ source: String?, _ phrase: String) {
            let w = KeyCatalogue.warnings(for: value, source: source)
            #expect(w.contains { $0.contains(phrase) }, "\(w)")
            #expect(!w.joined().contains(value.trimmingCharacters(in: .whitespaces)) || value.count < 6, "value leaked: \(w)")
        }
        warns(Self.openai + "\n", "openai", "whitespace")
        warns(" " + Self.openai, nil, "whitespace")
        warns("\"" + Self.openai + "\"", "openai", "wrapped in quotes")
        warns("'" + Self.github + "'", nil, "wrapped in quotes")
        warns("Bearer " + Self.openai, "openai", "Bearer")
        warns("OPENAI_API_KEY=" + Self.openai, "openai", "looks like an assignment")
        warns(Self.anthropic, "openai", "looks like an Anthropic API key")
        warns(Self.openai, "anthropic", "looks like an OpenAI project key")
        warns("abcdefghijklmnopqrstuvwxyz0123456789", "openai", "does not start with")
        warns(String(Self.openai.prefix(20)), "openai", "looks truncated")
        warns(String(Self.aws.prefix(15)), nil, "looks truncated")
        warns(Self.aws + "X", "aws", "two values pasted together")
        warns(String(Self.google.dropLast(3)), "gemini", "looks truncated")
        warns("pk_test_" + String(repeating: "4", count: 24), "stripe", "publishable key")
        warns("sk-or-v1-abc", "openrouter", "looks truncated")
        warns(Self.openai + " " + Self.openai, "openai", "contains whitespace")
    }

    @Test func unknownSourcesOnlyGetGenericChecks() {
        #expect(KeyCatalogue.warnings(for: "anything-goes-123", source: "ads") == [])
        // AWS sources also hold secret access keys, which have no prefix.
        #expect(KeyCatalogue.warnings(for: String(repeating: "s", count: 40), source: "aws") == [])
    }

    @Test func validationCombinesRulesAndCatalogue() {
        let req = SourceRequirement(id: "openai", type: .apiKey, format: FormatRule(prefixes: ["sk-"], minLength: 40))
        let bad = CredentialValidation.check(
            fields: [Field(name: "key", value: "sk-ant-short", isSecret: true)], type: .apiKey, source: "openai", requirement: req)
        #expect(bad.errors == ["key is 12 characters long, shorter than the minimum 40"])
        #expect(bad.warnings.contains { $0.contains("Anthropic") })
        #expect(bad.refusal.kind == .invalidCredential && bad.refusal.exitCode == 65)
        // What to do, as data: check it, or store it without the check (the
        // CLI words that as `--force`, ErrorWordsTests).
        #expect(bad.refusal.remedy?.action == .checkValueOrForce && bad.refusal.hint?.contains("to store it anyway") == true)
        #expect(!bad.refusal.message.contains("sk-ant-short"))
        let good = CredentialValidation.check(
            fields: [Field(name: "key", value: KeyCatalogueTests.openai, isSecret: true)], type: .apiKey, source: "openai", requirement: req)
        #expect(good.passes && good.warnings.isEmpty)
        let wrongType = CredentialValidation.check(
            fields: [Field(name: "email", value: "a@b.org", isSecret: false)], type: .email, source: "openai", requirement: req)
        #expect(wrongType.passes && wrongType.warnings.contains { $0.contains("needs an api-key credential") })
    }
}

@Suite("Source status and registered manifests")
struct SourceStatusTests {
    let today = Day("2026-06-15")!

    func key(_ v: String) -> Field { Field(name: "key", value: v, isSecret: true) }
    func email(_ v: String) -> Field { Field(name: "email", value: v, isSecret: false) }

    @Test func readyMissingInvalidExpired() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let m = try parseManifest(exampleManifest)
        var s = try v.check(m, today: today)
        #expect(s.map(\.state) == [.missing, .missing])
        #expect(s[0].problems == ["no item with source 'ads' has a key field"])
        #expect(s[1].problems == ["no item with source 'crossref' has an email field"])

        try v.add(ItemDraft(name: "ads", type: .apiKey, fields: [key("short!")], source: "ads"))
        s = try v.check(m, today: today)
        #expect(s[0].state == .invalid && s[0].items == ["ads"])
        #expect(s[0].problems.count == 2 && !s[0].problems.joined().contains("short!"))

        var e = ItemEdit()
        e.setFields = [key("abcdefghij0123456789ABC")]
        e.expires = .some(Day("2026-06-14")!)
        try v.edit("ads", e)
        s = try v.check(m, today: today)
        #expect(s[0].state == .expired && s[0].expires == Day("2026-06-14") && s[0].problems == ["expired on 2026-06-14"])
        // The expiry day itself is still valid.
        #expect(try v.status(of: m.sources[0], today: Day("2026-06-14")!).state == .ready)

        e = ItemEdit()
        e.expires = .some(nil)
        try v.edit("ads", e)
        try v.add(ItemDraft(name: "me", type: .email, fields: [email("me@example.org")], source: "crossref"))
        s = try v.check(m, today: today)
        #expect(s.map(\.state) == [.ready, .ready])
        #expect(s[1].items == ["me"])
    }

    @Test func lookupPrefersTheMatchingTypeAndLiveItems() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let req = SourceRequirement(id: "s", type: .apiKeyWithEmail)
        try v.add(ItemDraft(name: "k", type: .apiKey, fields: [key("k1")], source: "s"))
        #expect(try v.status(of: req, today: today).state == .missing)
        try v.add(ItemDraft(name: "e", type: .email, fields: [email("a@b.org")], source: "s"))
        var st = try v.status(of: req, today: today)
        #expect(st.state == .ready && st.items == ["k", "e"])
        // One item holding both wins over two separate ones.
        try v.add(ItemDraft(name: "both", type: .apiKeyWithEmail, fields: [key("k2"), email("c@d.org")], source: "s"))
        st = try v.status(of: req, today: today)
        #expect(st.items == ["both"])
        // For a key, the api-key item is preferred over api-key-with-email.
        #expect(try v.credential(forSource: "s", field: "key", today: today)?.value == "k1")
        // An expired candidate loses to a live one of the same type.
        try v.add(ItemDraft(name: "k-old", type: .apiKey, fields: [key("k0")], source: "s", expires: Day("2020-01-01")))
        #expect(try v.credential(forSource: "s", field: "key", today: today)?.value == "k1")
        // Deleted items do not count.
        try v.delete("k")
        #expect(try v.credential(forSource: "s", field: "key", today: today)?.value == "k0")
    }

    @Test func registeredManifestsAreHiddenItemsThatCanBeReplacedAndRemoved() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        #expect(try !v.registerRequirements(Data(exampleManifest.utf8), name: "app", file: "app.json"))
        #expect(try v.list().isEmpty, "reserved items are hidden from list()")
        var regs = try v.registeredRequirements()
        #expect(regs.map(\.name) == ["app"] && regs[0].manifest?.sources.count == 2)
        #expect(try v.requirement(forSource: "ads")?.name == "NASA ADS")
        #expect(try v.requirement(forSource: "nope") == nil)

        let replacement = #"{"version": 1, "sources": [{"id": "ads", "type": "api-key", "name": "ADS v2"}]}"#
        #expect(try v.registerRequirements(Data(replacement.utf8), name: "app", file: "new.json"))
        regs = try v.registeredRequirements()
        #expect(regs.count == 1 && regs[0].manifest?.source("ads")?.name == "ADS v2")
        #expect(try v.registeredRequirementsText(named: "app") == replacement)

        // A malformed manifest is refused and nothing changes.
        #expect(throws: CofferError.self) { try v.registerRequirements(Data("{}".utf8), name: "bad", file: "bad.json") }
        #expect(try v.registeredRequirements().count == 1)

        try v.removeRequirements(named: "app")
        #expect(try v.registeredRequirements().isEmpty)
        #expect(throws: CofferError.self) { try v.removeRequirements(named: "app") }
    }

    @Test func reservedNamesAreRefusedForUserItems() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        do {
            try v.add(ItemDraft(name: ".coffer/requirements/x", type: .note))
            Issue.record("accepted")
        } catch { #expect(error.kind == .usage) }
        try v.add(ItemDraft(name: "a", type: .note))
        var e = ItemEdit()
        e.rename = ".coffer/x"
        #expect(throws: CofferError.self) { try v.edit("a", e) }
    }

    @Test func validateUsesRegisteredManifestsUnlessOneIsGiven() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.registerRequirements(Data(exampleManifest.utf8), name: "app", file: "app.json")
        let short = [key("short")]
        #expect(try !v.validate(fields: short, type: .apiKey, source: "ads").passes)
        let other = RequirementsManifest(sources: [SourceRequirement(id: "ads", type: .apiKey)])
        #expect(try v.validate(fields: short, type: .apiKey, source: "ads", manifest: other).passes)
        #expect(try v.validate(fields: short, type: .apiKey, source: "unknown").passes)
    }
}
