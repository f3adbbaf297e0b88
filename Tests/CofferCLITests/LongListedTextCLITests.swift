import CofferTestSupport
import Foundation
import Testing

/// A listed text (url, username, source, tags) longer than an item
/// record's 16-bit length once ended coffer with a trap (signal 4) while
/// sealing the record. The record now keeps its first 64 KiB, cut at a
/// character boundary (docs/key-hierarchy.md, "Item records"); the value
/// itself is stored and read whole.
@Suite("item records: listed texts over 64 KiB")
struct LongListedTextCLITests {
    @Test func aURLOver64KiBIsStoredWholeAndListedCut() throws {
        let home = TestHome()
        home.initVault()
        // 65,534 ASCII bytes, then "é" (2 bytes) straddling byte 65,535.
        let url = "https://x/" + String(repeating: "a", count: 65_524) + "é" + String(repeating: "b", count: 5_000)
        let added = home.unlocked(["add", "site", "--type", "login", "--field", "url=\(url)", "--secret", "password"], stdin: "pw\n")
        #expect(added.status == 0, "\(added)")
        let got = home.unlocked(["get", "site", "--field", "url"])
        #expect(got.status == 0 && got.out == url, "exit \(got.status), \(got.stdout.utf8.count) bytes")
        let ls = home.unlocked(["ls"])
        #expect(ls.status == 0 && ls.stdout.contains("site"), "\(ls)")
        // (What the listing holds, the cut url, is checked in
        // IntegrityEncodingTests.aListedTextOver64KiBIsCutAtACharacter.)
        #expect(home.unlocked(["verify"]).status == 0)
        // Through a bundle too: exported, cloned (the bulk path), listed the same.
        #expect(home.unlocked(["export", "--out", "full.cb"]).status == 0)
        let cloned = home.run(["clone", "full.cb", "--vault", "b.coffer", "--passphrase-fd", "3"], fd3: home.passphrase + "\n")
        #expect(cloned.status == 0, "\(cloned)")
        let other = home.run(["get", "site", "--field", "url", "--vault", "b.coffer", "--passphrase-fd", "3"], fd3: home.passphrase + "\n")
        #expect(other.status == 0 && other.out == url)
        let verify = home.run(["verify", "--vault", "b.coffer", "--passphrase-fd", "3"], fd3: home.passphrase + "\n")
        #expect(verify.status == 0, "\(verify)")
    }
}
