import CofferTestSupport
import Foundation
import Testing

/// The KeePassXC TOTP layouts of Tests/Fixtures/interop/keepass-totp-layouts.xml
/// give the same codes in KeePassXC (`keepassxc-cli import`, then `show
/// --totp`) as in Coffer (`import --from keepass-xml`, then `otp --at` the
/// same second). Run by `make test-interop` (COFFER_INTEROP=1).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct KeePassTOTPInteropTests {
    @Test func keepassXCAndCofferAgreeOnEveryCode() throws {
        let home = TestHome()
        home.initVault()
        let xml = InterchangeCLITests.fixture("keepass-totp-layouts.xml")
        var env = home.environment
        env["QT_QPA_PLATFORM"] = "offscreen"
        let db = home.path("totp.kdbx")
        let made = Spawn.timed("/usr/bin/env", ["keepassxc-cli", "import", "-p", xml, db], environment: env, workDir: home.root.path, stdin: "pw\npw\n")
        try #require(made.status == 0, "\(made)")
        let r = home.unlocked(["import", "--from", "keepass-xml", xml])
        try #require(r.status == 0, "\(r)")
        // KeePassXC 2.7 reads these layouts (not KeePass 2.47's TimeOtp-*).
        for name in ["otp URI", "KeeOTP", "Seed and settings", "Steam"] {
            var compared = false
            for _ in 0..<3 where !compared {
                let before = Int64(Date().timeIntervalSince1970)
                let kx = Spawn.timed(
                    "/usr/bin/env", ["keepassxc-cli", "show", "--totp", "--quiet", db, name], environment: env, workDir: home.root.path, stdin: "pw\n")
                let after = Int64(Date().timeIntervalSince1970)
                // Both ends in one 30-second window (so in one 60-second one too).
                guard before / 30 == after / 30 else {
                    Thread.sleep(forTimeInterval: 3)
                    continue
                }
                try #require(kx.status == 0, "\(name): \(kx)")
                let code = kx.text.trimmingCharacters(in: .whitespacesAndNewlines)
                let ours = home.unlocked(["otp", name, "--at", String(before)])
                #expect(ours.status == 0 && ours.out == code, "\(name): keepassxc \(code), coffer \(ours)")
                compared = true
            }
            #expect(compared, "\(name): never inside one time window")
        }
    }
}
