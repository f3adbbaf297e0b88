import CofferTestSupport
import Foundation
import Testing

@Suite("passphrase strength, black-box")
struct PassphraseStrengthCLITests {
    @Test func initRefusesAFarTooWeakPassphraseUnlessForced() {
        let home = TestHome()
        let weak = home.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "a\n")
        #expect(weak.status == 64, "\(weak)")
        #expect(weak.stderr.contains("the passphrase is far too weak"), "\(weak)")
        #expect(!FileManager.default.fileExists(atPath: home.vaultPath), "a vault was created")
        let forced = home.run(["init", "--force"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "a\n")
        #expect(forced.status == 0, "\(forced)")
        #expect(forced.stderr.contains("warning: the passphrase is weak"), "\(forced)")
    }

    @Test func weakButAcceptablePassphrasesWarnStrongOnesDoNot() {
        let home = TestHome()
        let r = home.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "bench passphrase\n")
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("warning: the passphrase is weak (about"), "\(r)")
        #expect(!r.stderr.contains("bench passphrase"), "the passphrase was printed")
        let strong = TestHome()
        let s = strong.run(["init"] + FastKDF.arguments + ["--passphrase-fd", "3"], fd3: "correct horse battery staple\n")
        #expect(s.status == 0 && !s.stderr.contains("passphrase is weak"), "\(s)")
    }

    @Test func passwdChecksTheNewPassphrase() {
        let home = TestHome()
        home.initVault()
        let newFile = home.write("new", "hunter2\n")
        let r = home.unlocked(["passwd", "--new-passphrase-file", newFile])
        #expect(r.status == 64 && r.stderr.contains("far too weak"), "\(r)")
        #expect(home.unlocked(["ls"]).status == 0, "the old passphrase must still work")
    }
}
