import CofferTestSupport
import Foundation
import Testing

/// `coffer init` refuses what it must before it asks for anything.
@Suite("coffer init: refusals before any question, black-box")
struct InitCLITests {
    @Test func initRefusesAnExistingVaultBeforeAskingAnything() {
        let home = TestHome()
        home.initVault()
        let vault = home.vaultPath
        let before = home.vaultBytes()
        // No passphrase source at all and no terminal: still 73, not 77.
        let r = home.run(["init"])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.contains("a vault already exists at \(vault)"), "\(r)")
        #expect(!r.stderr.contains("remove the file"), "\(r)")
        #expect(!r.stderr.contains("assphrase"), "asked for a passphrase first: \(r)")
        #expect(home.vaultBytes() == before)
    }

    @Test func hugeKDFMemoryIsAUsageErrorNotACrash() {
        let home = TestHome()
        for size in ["99999999999999999G", "18446744073709551615K", "0M", "-1M", "M"] {
            let r = home.run(["init", "--kdf-memory=\(size)"])
            #expect(r.status == 64, "\(size): \(r)")
            #expect(r.stderr.contains("invalid --kdf-memory"), "\(size): \(r)")
        }
    }
}
