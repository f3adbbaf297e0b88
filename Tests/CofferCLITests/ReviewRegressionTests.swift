import CofferTestSupport
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

    /// A manifest pattern that backtracks exponentially is cut off, not
    /// left to hang `add` (manifests sync to every replica).
    @Test func backtrackingPatternCannotHang() {
        let home = TestHome()
        home.initVault()
        let manifest = home.path("r.json")
        FileManager.default.createFile(atPath: manifest, contents: Data(#"{"version":1,"sources":[{"id":"a","type":"api-key","format":{"pattern":"(.*a){25}"}}]}"#.utf8))
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

    /// The passphrase descriptor is not inherited by `coffer run`'s command.
    @Test func passphraseDescriptorIsNotInherited() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "sk-1").status == 0)
        let r = home.run(["run", "--passphrase-fd", "3", "--", "/bin/sh", "-c", "cat <&3 2>/dev/null; echo rc=$?"],
                         fd3: home.passphrase + "\n", env: ["K": "coffer://k"])
        #expect(r.status == 0, "\(r)")
        #expect(!r.stdout.contains(home.passphrase), "\(r.stdout)")
    }

    /// `coffer run` gives the command the user's umask, not coffer's 077.
    @Test func runRestoresTheUmask() {
        let home = TestHome()
        let r = Spawn.run("/bin/sh", ["-c", "umask 022; exec \"$0\" run -- /bin/sh -c umask", CofferBinary.path], stdin: nil, fd3: nil,
                          environment: home.environment, workDir: home.root.path)
        #expect(r.out == "0022", "\(r)")
    }

    /// An unlock whose token cannot be printed leaves no session behind.
    @Test func failedUnlockLeavesNoSession() throws {
        let home = TestHome()
        home.initVault()
        let r = Spawn.run("/bin/sh", ["-c", "exec \"$0\" unlock --shell sh --passphrase-fd 3 > /dev/full", CofferBinary.path],
                          stdin: nil, fd3: home.passphrase + "\n", environment: home.environment, workDir: home.root.path)
        #expect(r.status == 74, "\(r)")
        let dir = home.root.appendingPathComponent("run/coffer").path
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        #expect(files.filter { $0.hasSuffix(".session") }.isEmpty, "\(files)")
    }

    /// Naming one item twice is not a variable collision; a stored
    /// override that is not a variable name is refused.
    @Test func envListsAnItemOnceAndRefusesBadOverrides() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-1").status == 0)
        let r = home.unlocked(["env", "work/openai", "work/openai"])
        #expect(r.status == 0, "\(r)")
        let bad = home.unlocked(["edit", "work/openai", "--env-var", "key=A=1; touch x"])
        #expect(bad.status == 64, "\(bad)")
    }
}
