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
