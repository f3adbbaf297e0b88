import CofferTestSupport
import Foundation
import Testing

@Suite("clone counts what ls lists, black-box")
struct CountsCLITests {
    @Test func cloneCountsWhatLsLists() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "api-key"], stdin: "k1").status == 0)
        #expect(home.unlocked(["add", "b", "--type", "api-key"], stdin: "k2").status == 0)
        let req = home.write("m.json", #"{"version": 1, "sources": [{"id": "x", "type": "api-key"}]}"#)
        #expect(home.unlocked(["requirements", "add", req, "--name", "app"]).status == 0)
        #expect(home.unlocked(["rm", "a"]).status == 0)
        #expect(home.unlocked(["export", "--out", home.path("f.cb")]).status == 0)
        let clone = home.unlocked(["clone", home.path("f.cb"), "--vault", home.path("c.coffer")])
        #expect(clone.status == 0, "\(clone)")
        let listed = home.unlocked(["ls", "--vault", home.path("c.coffer")]).out.split(separator: "\n")
        #expect(listed.count == 1, "\(listed)")
        #expect(clone.stderr.contains("from \(home.path("f.cb")): 1 item\n"), "\(clone)")
    }
}
