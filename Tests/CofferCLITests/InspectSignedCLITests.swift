import CofferTestSupport
import Foundation
import Testing

/// `coffer inspect` of a signed bundle (format 6): the publisher's Ed25519
/// key and the publication counter, from the clear header, marked as not
/// verified (docs/bundle-format.md, "Import, clone and inspect").
@Suite("coffer inspect: a signed bundle's publisher and publication counter")
struct InspectSignedCLITests {
    static func json(_ home: TestHome, _ file: String) -> [String: Any] {
        let r = home.run(["inspect", file, "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "inspect.schema.json")
        return ((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]) ?? [:]
    }

    @Test("publisher and counter in text and JSON; the same key for one member's bundles, the counters an import compares; none for an unsigned bundle")
    func publisherAndCounter() throws {
        let (home, _, _) = SignedWritesCLITests.team()
        #expect(home.unlocked(["add", "svc/b", "--type", "api-key", "--field", "key=one", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "b1.cb", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["add", "svc/b2", "--type", "api-key", "--field", "key=two", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "b2.cb", "--vault", "b.coffer"]).status == 0)

        let b1 = Self.json(home, home.path("b1.cb"))
        let b2 = Self.json(home, home.path("b2.cb"))
        let a1 = Self.json(home, home.path("a1.cb"))
        let key = try #require(b1["publisher"] as? String)
        #expect(key.count == 64 && key.allSatisfy(\.isHexDigit), "\(key)")
        #expect(b2["publisher"] as? String == key)
        #expect(a1["publisher"] as? String != nil && a1["publisher"] as? String != key, "alice signed a1.cb")
        // `members ls --json` names the publisher: bob's sign key.
        let members = home.unlocked(["members", "ls", "--json"])
        SchemaValidation.expectValid(members.stdout, schema: "members.schema.json")
        let listed = ((try? JSONSerialization.jsonObject(with: Data(members.stdout.utf8))) as? [String: Any])?["members"] as? [[String: Any]] ?? []
        #expect(listed.first { $0["name"] as? String == "bob" }?["signKey"] as? String == key, "\(members)")
        #expect(listed.first { $0["name"] as? String == "alice" }?["signKey"] as? String == a1["publisher"] as? String)
        #expect(b1["authenticated"] as? Bool == false)
        let c1 = try #require((b1["publication"] as? NSNumber)?.uint64Value)
        let c2 = try #require((b2["publication"] as? NSNumber)?.uint64Value)
        #expect(c1 >= 1 && c2 > c1)

        let text = home.run(["inspect", home.path("b2.cb")])
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("format:     6"), "\(text)")
        #expect(text.stdout.contains("publisher:  \(key) (Ed25519 key of the member who signed it; the signature is verified on import)"), "\(text)")
        #expect(text.stdout.contains("published:  publication counter \(c2)\n"), "\(text)")
        #expect(text.stderr.contains("not authenticated"), "\(text)")

        // The counters are the ones an import compares.
        #expect(home.unlocked(["import", "b2.cb"]).status == 0)
        let old = home.unlocked(["import", "b1.cb"])
        #expect(old.status == 65 && old.stderr.contains("its publication counter \(c1) is below \(c2)"), "\(old)")

        // An unsigned bundle (a vault without members) shows neither.
        let solo = TestHome()
        solo.initVault()
        #expect(solo.unlocked(["export", "--out", solo.path("s.cb")]).status == 0)
        let s = Self.json(solo, solo.path("s.cb"))
        #expect((s["formatVersion"] as? Int ?? 6) < 6)
        #expect(s["publisher"] == nil && s["publication"] == nil)
        let plain = solo.run(["inspect", solo.path("s.cb")])
        #expect(plain.status == 0, "\(plain)")
        #expect(!plain.stdout.contains("publisher:") && !plain.stdout.contains("published:"), "\(plain)")
    }
}
