import Foundation
import Testing

/// Regressions for defects found in review.
@Suite("Review regressions")
struct ReviewRegressionTests {
    /// `coffer run` must not hand the passphrase or the session token to
    /// the command: that would give it the whole vault.
    @Test func runDoesNotLeakThePassphraseOrSession() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        let r = home.run(["run", "--", "/bin/sh", "-c", "env | grep ^COFFER_ || true"],
                         env: ["COFFER_PASSPHRASE": home.passphrase, "K": "coffer://k"])
        #expect(r.status == 0, "\(r)")
        #expect(!r.stdout.contains("COFFER_PASSPHRASE"), "\(r.stdout)")
        let kept = home.run(["run", "--keep-session", "--", "/bin/sh", "-c", "env | grep ^COFFER_PASSPHRASE= | wc -l"],
                            env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(kept.out.trimmingCharacters(in: .whitespaces) == "1")
    }

    /// A failed write to stdout is one line and exit 74, not a trap with a
    /// backtrace.
    @Test func unwritableStdoutIsOneLine() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        // /bin/sh redirects coffer's stdout to /dev/full (writes fail with ENOSPC).
        let script = "exec \"$0\" get k --passphrase-fd 3 > /dev/full"
        let r = Spawn.run("/bin/sh", ["-c", script, CofferBinary.path], stdin: nil, fd3: home.passphrase + "\n",
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
}
