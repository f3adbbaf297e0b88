import CofferTestSupport
import Foundation
import Testing

/// How failures are reported: one line and the exit code of
/// docs/exit-codes.md, nothing left behind, no value quoted in an error or
/// a warning, no input that can hang a command.
@Suite("failures and warnings: one line, the right exit code, no value quoted, black-box")
struct FailureReportingCLITests {
    /// A failed write to stdout is one line and exit 74, not a trap with a
    /// backtrace.
    @Test func unwritableStdoutIsOneLine() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        // /bin/sh redirects coffer's stdout to /dev/full (writes fail with ENOSPC).
        let script = "exec \"$0\" get k --passphrase-fd 3 > /dev/full"
        let r = Spawn.run(
            "/bin/sh", ["-c", script, CofferBinary.path], stdin: nil, fd3: home.passphrase + "\n",
            environment: home.environment, workDir: home.root.path)
        #expect(r.status == 74, "\(r)")
        #expect(r.stderr.hasPrefix("coffer: error: cannot write to standard output"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count <= 2)
        #expect(!r.stderr.contains("sk-1"))
    }

    /// Removing a field that does not exist is "not found" (66), like
    /// reading one.
    @Test func unsetUnknownFieldIsNotFound() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        let r = home.unlocked(["edit", "k", "--unset", "ghost"])
        #expect(r.status == 66, "\(r)")
    }

    /// A requirements path that is a folder gets a clear message.
    @Test func manifestThatIsAFolder() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["check", "--requirements", home.root.path])
        #expect(r.status == 64 || r.status == 65 || r.status == 66, "\(r)")
        #expect(r.stderr.contains("is a folder"), "\(r.stderr)")
        #expect(!r.stderr.contains("NSCocoaErrorDomain"))
    }

    /// A manifest pattern that backtracks exponentially is cut off, not
    /// left to hang `add` (manifests sync to every replica).
    @Test func backtrackingPatternCannotHang() {
        let home = TestHome()
        home.initVault()
        let manifest = home.path("r.json")
        FileManager.default.createFile(
            atPath: manifest, contents: Data(#"{"version":1,"sources":[{"id":"a","type":"api-key","format":{"pattern":"(.*a){25}"}}]}"#.utf8))
        let start = Date()
        let r = home.unlocked(["add", "x", "--source", "a", "--requirements", manifest], stdin: String(repeating: "a", count: 40) + "b!")
        #expect(Date().timeIntervalSince(start) < 20, "add took too long")
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("takes too long"), "\(r.stderr)")
        #expect(!r.stderr.contains("aaaaaaaaaa"), "the value must not be echoed")
    }

    /// A base32 secret with '=' padding is not an "assignment", and no
    /// warning ever quotes part of a value.
    @Test func warningsNeverQuoteTheValue() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "k"], stdin: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP====")
        #expect(r.status == 0, "\(r)")
        #expect(!r.stderr.contains("JBSWY3DP"), "\(r.stderr)")
        let a = home.unlocked(["add", "k2"], stdin: "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH")
        #expect(a.stderr.contains("looks like an assignment"), "\(a.stderr)")
        #expect(!a.stderr.contains("OPENAI_API_KEY") && !a.stderr.contains("sk-abc"), "\(a.stderr)")
    }

    /// An unlock whose token cannot be printed leaves no session behind.
    @Test func failedUnlockLeavesNoSession() throws {
        let home = TestHome()
        home.initVault()
        let r = Spawn.run(
            "/bin/sh", ["-c", "exec \"$0\" unlock --shell sh --passphrase-fd 3 > /dev/full", CofferBinary.path],
            stdin: nil, fd3: home.passphrase + "\n", environment: home.environment, workDir: home.root.path)
        #expect(r.status == 74, "\(r)")
        let dir = home.root.appendingPathComponent("run/coffer").path
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        #expect(files.filter { $0.hasSuffix(".session") }.isEmpty, "\(files)")
    }
}
