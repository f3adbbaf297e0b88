import CofferTestSupport
import Foundation
import Testing

/// Black-box tests of `coffer export/summary/import/clone/inspect` (issue 4).
@Suite("bundles, black-box")
struct BundleCLITests {
    /// `ls --json` plus `get --json` of every item: the logical content.
    static func dump(_ home: TestHome, vault: String? = nil) -> String {
        let v = vault.map { ["--vault", $0] } ?? []
        let ls = home.unlocked(["ls", "--json"] + v)
        var out = ls.stdout
        if let data = ls.stdout.data(using: .utf8),
            let items = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        {
            for item in items {
                out += home.unlocked(["get", "--json", "id:\(item["id"] as? String ?? "")"] + v).stdout
            }
        }
        return out
    }

    static func bytes(_ home: TestHome, _ name: String) -> [UInt8] { Array((try? Data(contentsOf: URL(fileURLWithPath: home.path(name)))) ?? Data()) }
    static func write(_ home: TestHome, _ name: String, _ bytes: [UInt8]) { try! Data(bytes).write(to: URL(fileURLWithPath: home.path(name))) }

    /// A vault with a synced and a local-only item, and a clone of it at
    /// `b.coffer` made from a full bundle.
    static func twoReplicas() -> TestHome {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        #expect(
            home.unlocked(["add", "home/bank", "--type", "login", "--field", "username=me", "--secret", "password", "--local-only"], stdin: "pw\n").status == 0)
        let ex = home.unlocked(["export", "--out", "full.cb"])
        #expect(ex.status == 0, "\(ex)")
        let cl = home.unlocked(["clone", "full.cb", "--vault", "b.coffer"])
        #expect(cl.status == 0, "\(cl)")
        return home
    }

    @Test func exportCloneCarriesSyncItemsOnly() {
        let home = Self.twoReplicas()
        let ls = home.unlocked(["ls", "--vault", "b.coffer"])
        #expect(ls.stdout == "work/openai  api-key\n")
        #expect(home.unlocked(["get", "work/openai", "--vault", "b.coffer"]).stdout == "sk-1\n")
        let get = home.unlocked(["get", "home/bank", "--vault", "b.coffer"])
        #expect(get.status == 66)
    }

    @Test func deltaThroughSummary() {
        let home = Self.twoReplicas()
        let sum = home.unlocked(["summary", "--out", "b.sum", "--vault", "b.coffer"])
        #expect(sum.status == 0, "\(sum)")
        #expect(home.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-2\n").status == 0)
        let ex = home.unlocked(["export", "--since", "b.sum", "--out", "delta.cb"])
        #expect(ex.status == 0, "\(ex)")
        #expect(ex.stderr.contains("wrote delta bundle delta.cb: 1 item"))
        #expect(Self.bytes(home, "delta.cb").count < 16 * 1024)
        let im = home.unlocked(["import", "delta.cb", "--vault", "b.coffer"])
        #expect(im.status == 0, "\(im)")
        #expect(im.stderr.contains("0 added, 1 changed, 0 unchanged"))
        #expect(home.unlocked(["get", "work/openai", "--vault", "b.coffer"]).stdout == "sk-2\n")
        // A summary of another vault, or a file that is not a summary.
        let other = TestHome()
        other.initVault()
        #expect(other.unlocked(["summary", "--out", home.path("other.sum")]).status == 0)
        let bad = home.unlocked(["export", "--since", "other.sum", "--out", "x.cb"])
        #expect(bad.status == 65 && bad.stderr.contains("is the summary of another vault"), "\(bad)")
        let notSum = home.unlocked(["export", "--since", "delta.cb", "--out", "x.cb"])
        #expect(notSum.status == 65 && notSum.stderr.contains("is not a Coffer summary file (it looks like a Coffer bundle)"), "\(notSum)")
        #expect(!FileManager.default.fileExists(atPath: home.path("x.cb")))
    }

    @Test func badBundlesAreRefusedAndChangeNothing() {
        let home = Self.twoReplicas()
        // A second, unseen state of the vault to import into b.
        #expect(home.unlocked(["add", "work/github", "--type", "api-key", "--secret", "key"], stdin: "ghp-1\n").status == 0)
        #expect(home.unlocked(["export", "--out", "full2.cb"]).status == 0)
        let good = Self.bytes(home, "full2.cb")
        let other = TestHome()
        other.initVault()
        #expect(other.unlocked(["add", "x", "--type", "api-key", "--secret", "key"], stdin: "v\n").status == 0)
        #expect(other.unlocked(["export", "--out", home.path("foreign.cb")]).status == 0)

        var cases: [(String, [UInt8], String)] = [
            ("empty", [], "is empty, not a Coffer bundle"),
            ("random", (0..<2048).map { _ in UInt8.random(in: 0...255) }, "is not a Coffer bundle (unrecognized data)"),
            ("text", Array("OPENAI_API_KEY=sk-123\n".utf8), "is not a Coffer bundle (it looks like a text file)"),
            ("vault", Array(home.vaultBytes()), "is not a Coffer bundle (it looks like an SQLite database (a vault file?))"),
            ("foreign", Self.bytes(home, "foreign.cb"), "belongs to another vault"),
            ("truncated-header", Array(good.prefix(60)), "is truncated (its header ends early)"),
            ("truncated-stream", Array(good.prefix(good.count - 30)), "is truncated (its stream ends early)"),
            ("truncated-at-chunk", Array(good.prefix(good.count - (good.count - Self.firstChunkStart(good)))), "is truncated (its stream ends early)"),
            ("trailing", good + [0x0a], "has data after the end of the bundle"),
        ]
        var newer = good
        newer[9] = 7
        cases.append(("newer", newer, "has bundle format 7; this coffer reads format 6"))
        for p in [0, 8, 12, 20, 40, 70, 130, 200, Self.firstChunkStart(good) + 2, Self.firstChunkStart(good) + 10, good.count / 2, good.count - 1] {
            var flipped = good
            flipped[p] ^= 0x10
            cases.append(("flip@\(p)", flipped, ""))
        }
        let before = Self.dump(home, vault: "b.coffer")
        let beforeBytes = home.vaultBytes(home.path("b.coffer"))
        for (name, bytes, message) in cases {
            Self.write(home, "bad.cb", bytes)
            let r = home.unlocked(["import", "bad.cb", "--vault", "b.coffer"])
            #expect(r.status == 65, "\(name): \(r)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.first?.hasPrefix("coffer: error: ") == true, "\(name): \(r.stderr)")
            #expect(lines.count <= 2, "\(name): \(r.stderr)")
            if !message.isEmpty { #expect(r.stderr.contains(message), "\(name): \(r.stderr)") }
            #expect(home.vaultBytes(home.path("b.coffer")) == beforeBytes, "\(name): vault changed")
        }
        #expect(Self.dump(home, vault: "b.coffer") == before)
        // The intact bundle still imports.
        let ok = home.unlocked(["import", "full2.cb", "--vault", "b.coffer"])
        #expect(ok.status == 0 && ok.stderr.contains("1 added"), "\(ok)")
    }

    static func firstChunkStart(_ b: [UInt8]) -> Int {
        14 + Int(UInt32(b[10]) << 24 | UInt32(b[11]) << 16 | UInt32(b[12]) << 8 | UInt32(b[13])) + 24
    }

    @Test func missingPathsExit66() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["import", "nope.cb"]).status == 66)
        #expect(home.run(["inspect", "nope.cb"]).status == 66)
        #expect(home.unlocked(["clone", "nope.cb", "--vault", "new.coffer"]).status == 66)
        #expect(home.unlocked(["export", "--since", "nope.sum", "--out", "x.cb"]).status == 66)
    }

    @Test func cloneRefusals() {
        let home = Self.twoReplicas()
        let wrong = home.run(["clone", "full.cb", "--vault", "c.coffer", "--passphrase-fd", "3"], fd3: "not it\n")
        #expect(wrong.status == 77, "\(wrong)")
        #expect(wrong.stderr.contains("wrong passphrase for the bundle"))
        let exists = home.unlocked(["clone", "full.cb", "--vault", "b.coffer"])
        #expect(exists.status == 73, "\(exists)")
        #expect(home.unlocked(["summary", "--out", "b.sum", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--since", "b.sum", "--out", "delta.cb"]).status == 0)
        let delta = home.unlocked(["clone", "delta.cb", "--vault", "c.coffer"])
        #expect(delta.status == 65 && delta.stderr.contains("a clone needs a full bundle"), "\(delta)")
        var bad = Self.bytes(home, "full.cb")
        bad[bad.count - 3] ^= 1
        Self.write(home, "bad.cb", bad)
        #expect(home.unlocked(["clone", "bad.cb", "--vault", "c.coffer"]).status == 65)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: home.root.path)) ?? []
        #expect(!files.contains { $0.contains("c.coffer") }, "\(files)")
    }

    @Test func inspectNeedsNoPassphraseAndMatchesSchema() throws {
        let home = Self.twoReplicas()
        let text = home.run(["inspect", "full.cb"])
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("kind:       full"))
        #expect(text.stdout.contains("records:    1"))
        #expect(!text.stdout.contains("sk-1"))
        let json = home.run(["inspect", "--json", "full.cb"])
        #expect(json.status == 0)
        SchemaValidation.expectValid(json.stdout, schema: "inspect.schema.json")
        #expect(home.unlocked(["summary", "--out", "b.sum", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--since", "b.sum", "--out", "delta.cb"]).status == 0)
        let dj = home.run(["inspect", "--json", "delta.cb"])
        SchemaValidation.expectValid(dj.stdout, schema: "inspect.schema.json")
        #expect(dj.stdout.contains("\"kind\" : \"delta\""))
        let bad = home.run(["inspect", "--json", "b.sum"])
        #expect(bad.status == 65 && bad.stderr.contains("it looks like a Coffer summary file"), "\(bad)")
    }
}
