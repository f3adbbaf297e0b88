import Foundation
import Testing

@Suite("coffer basics, black-box")
struct BasicCLITests {
    @Test func initAddGetRoundTrip() throws {
        let home = TestHome()
        home.initVault()
        let add = home.unlocked(["add", "work/openai", "--type", "api-key", "--source", "openai", "--secret", "key"], stdin: "sk-test-123\n")
        #expect(add.status == 0, "\(add)")
        let get = home.unlocked(["get", "work/openai"])
        #expect(get.status == 0)
        #expect(get.stdout == "sk-test-123\n")
    }
}
