import CofferTestSupport
import Foundation
import Testing

/// Every command that needs the vault key must accept the shell session
/// instead of a passphrase (issue: sessions, "every command that needs the
/// key uses a valid session"). A regression test: `coffer sync` once asked
/// for a passphrase even with a session.
@Suite("Sessions unlock every command")
struct SessionCommandsTests {
    @Test func everyKeyedCommandWorksWithASession() throws {
        let home = SessionTests.homeWithItem()
        let token = try SessionTests.unlock(home)
        let env = ["COFFER_SESSION": token]
        let dir = home.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let manifest = home.path("req.json")
        FileManager.default.createFile(
            atPath: manifest, contents: Data(#"{"version": 1, "sources": [{"id": "x", "type": "api-key", "required": false}]}"#.utf8))
        let commands: [[String]] = [
            ["ls"], ["get", "work/openai"], ["history", "work/openai"],
            ["edit", "work/openai", "--tag", "t"],
            ["read", "coffer://work/openai"], ["env", "work/openai"],
            ["run", "--", "/bin/true"],
            ["export", "--out", home.path("b.bundle")], ["summary", "--out", home.path("s.summary")],
            ["import", home.path("b.bundle")], ["sync", dir], ["sync", dir, "--dry-run"],
            ["conflicts"], ["replicas"], ["check", "--requirements", manifest],
            ["add", "work/new", "--type", "api-key"], ["rm", "-f", "work/new"],
        ]
        for args in commands {
            let r = home.run(args, stdin: "sk-new-value\n", env: env)
            #expect(r.status == 0, "coffer \(args.joined(separator: " ")) with a session: \(r)")
            #expect(!r.stderr.contains("passphrase"), "coffer \(args.joined(separator: " ")) asked for a passphrase")
        }
    }
}
