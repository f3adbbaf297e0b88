import Foundation
import Testing

/// Issue 15's first-hour findings: init, --json everywhere, suggestions.
@Suite("first-hour polish, black-box")
struct PolishCLITests {
    @Test func initRefusesAnExistingVaultBeforeAskingAnything() {
        let home = TestHome()
        home.initVault()
        let vault = home.vaultPath
        let before = home.vaultBytes()
        // No passphrase source at all and no terminal: still 73, not 77.
        let r = home.run(["init"])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.contains("a vault already exists at \(vault)"), "\(r)")
        #expect(!r.stderr.contains("remove the file"), "\(r)")
        #expect(!r.stderr.contains("assphrase"), "asked for a passphrase first: \(r)")
        #expect(home.vaultBytes() == before)
    }

    @Test func hugeKDFMemoryIsAUsageErrorNotACrash() {
        let home = TestHome()
        for size in ["99999999999999999G", "18446744073709551615K", "0M", "-1M", "M"] {
            let r = home.run(["init", "--kdf-memory=\(size)"])
            #expect(r.status == 64, "\(size): \(r)")
            #expect(r.stderr.contains("invalid --kdf-memory"), "\(size): \(r)")
        }
    }

    @Test func unlockJSONFlagMatchesShellJSON() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["unlock", "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "unlock.schema.json")
    }

    @Test func requirementsListHasJSON() {
        let home = TestHome()
        home.initVault()
        let req = home.write("req.json", #"{"version": 1, "sources": [{"id": "ads", "type": "api-key", "required": true}, {"id": "crossref", "type": "email"}]}"#)
        #expect(home.unlocked(["requirements", "add", req, "--name", "app"]).status == 0)
        let r = home.unlocked(["requirements", "ls", "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "requirements-list.schema.json")
        let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let manifests = obj?["manifests"] as? [[String: Any]]
        #expect(manifests?.first?["name"] as? String == "app")
        #expect(manifests?.first?["sources"] as? [String] == ["ads", "crossref"])
    }
}

@Suite("first-hour polish: suggestions and warnings, black-box")
struct PolishSuggestionCLITests {
    @Test func mistypedCommandGetsTheNearestOne() {
        let home = TestHome()
        let r = home.run(["lsit"])
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("coffer: error: unknown command 'lsit'"), "\(r)")
        #expect(r.stderr.contains("did you mean `coffer ls`?"), "\(r)")
        let far = home.run(["frobnicate"])
        #expect(far.status == 64, "\(far)")
        #expect(!far.stderr.contains("did you mean"), "\(far)")
        // Real commands and help are untouched.
        #expect(home.run(["help"]).status == 0)
        #expect(home.run(["ls", "--help"]).status == 0)
    }

    @Test func mistypedItemNameGetsTheNearestOne() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB").status == 0)
        let r = home.unlocked(["get", "work/opneai"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("no item named 'work/opneai'"), "\(r)")
        #expect(r.stderr.contains("did you mean `work/openai`?"), "\(r)")
        #expect(!r.stderr.contains("sk-proj"), "a value leaked into the error")
        let far = home.unlocked(["get", "personal/bank"])
        #expect(far.status == 66 && !far.stderr.contains("did you mean"), "\(far)")
    }

    @Test func misspelledConfigKeyIsReported() throws {
        let home = TestHome()
        home.initVault()
        let dir = home.path("home/.config/coffer")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = home.write("home/.config/coffer/config", "session.timout = 5m\n")
        let r = home.unlocked(["unlock"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("config:1: unknown key 'session.timout' (did you mean session.timeout?); ignored"), "\(r)")
    }

    @Test func multiLineNotesGetNoKeyWarning() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "notes/recovery", "--type", "note"], stdin: "first line\nsecond line with spaces\n")
        #expect(r.status == 0, "\(r)")
        #expect(!r.stderr.contains("warning"), "\(r)")
        let get = home.unlocked(["get", "notes/recovery"])
        #expect(get.stdout.contains("first line\nsecond line with spaces"), "\(get)")
    }

    @Test func pastExpiryWarns() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "old", "--type", "api-key", "--expires", "2020-01-01"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("--expires 2020-01-01 is in the past"), "\(r)")
        let future = home.unlocked(["add", "new", "--type", "api-key", "--expires", "30d"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(future.status == 0 && !future.stderr.contains("in the past"), "\(future)")
    }
}
