import CofferTestSupport
import Foundation
import Testing

/// `coffer help TOPIC`: the docs, compiled into the binary (issue 28 item 3).
@Suite("help topics, black-box")
struct HelpTopicCLITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every topic prints its doc exactly as docs/ has it now: the
    /// generated texts are not stale (`make help-topics` regenerates them).
    @Test(arguments: [
        ("guide", "docs/user-guide.md"), ("sync", "docs/sync.md"), ("sessions", "docs/sessions.md"),
        ("references", "docs/references.md"), ("import", "docs/import-export.md"),
        ("requirements", "docs/requirements.md"), ("audit", "docs/audit.md"),
        ("git-credential", "docs/git-credential.md"), ("ssh", "docs/ssh.md"), ("secret-service", "docs/secret-service.md"), ("sharing", "docs/sharing.md"),
        ("exit-codes", "docs/exit-codes.md"),
        ("threat-model", "docs/threat-model.md"),
    ])
    func aTopicPrintsItsDoc(topic: String, file: String) throws {
        let home = TestHome()
        let doc = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
        // Outside the source tree, as an installed coffer runs.
        let r = home.run(["help", topic])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.hasPrefix(doc.trimmingCharacters(in: .newlines)), "`coffer help \(topic)` differs from \(file): run `make help-topics`")
    }

    @Test func topicsAreListedAndCommandsKeepTheirHelp() {
        let home = TestHome()
        let list = home.run(["help", "topics"])
        #expect(list.status == 0, "\(list)")
        for t in ["guide", "sync", "sessions", "references", "import", "exit-codes"] {
            #expect(list.stdout.contains("  \(t) "), "\(t) missing from \(list.stdout)")
        }
        // A topic that is also a command says where the command's options are.
        #expect(home.run(["help", "sync"]).stdout.hasSuffix("(The options of the command: `coffer sync --help`.)\n"))
        // A command that is no topic: argument-parser's help, as before.
        let rekey = home.run(["help", "rekey"])
        #expect(rekey.status == 0 && rekey.stdout.contains("USAGE: coffer rekey"), "\(rekey)")
    }
}
