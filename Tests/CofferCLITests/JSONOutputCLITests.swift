import CofferTestSupport
import Foundation
import Testing

/// `--json` where the documented schemas promise it.
@Suite("--json output: unlock and requirements ls, black-box")
struct JSONOutputCLITests {
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
        let req = home.write(
            "req.json", #"{"version": 1, "sources": [{"id": "ads", "type": "api-key", "required": true}, {"id": "crossref", "type": "email"}]}"#)
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
