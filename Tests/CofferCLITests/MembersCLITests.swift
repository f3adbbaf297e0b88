import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer members add|ls|rm` (docs/sharing.md, "Members"): the
/// membership is a reserved item that syncs and merges like any other.
@Suite("coffer members")
struct MembersCLITests {
    static func identity(_ home: TestHome, _ name: String) -> String {
        let r = home.run(["identity", "new", "--name", name, "--out", home.path("\(name)-\(UUID().uuidString.prefix(6)).identity")])
        #expect(r.status == 0, "\(r)")
        return r.out
    }

    static func members(_ home: TestHome) -> [String] {
        home.unlocked(["members", "ls"]).stdout.split(separator: "\n").map(String.init)
    }

    @Test("members add, ls (text and JSON) and rm, which rotates the key and says what the member keeps")
    func lifecycle() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["members", "ls"]).stdout == "")
        let bob = Self.identity(home, "bob")
        let ci = Self.identity(home, "ci")
        let add = home.unlocked(["members", "add", "bob", bob])
        #expect(add.status == 0, "\(add)")
        #expect(add.stderr.contains("added the member 'bob' (read-write)"), "\(add)")
        #expect(home.unlocked(["members", "add", "ci", ci, "--read-only"]).status == 0)
        #expect(Self.members(home) == ["bob\tread-write\t\(bob)", "ci\tread-only\t\(ci)"])
        let json = home.unlocked(["members", "ls", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "members.schema.json")
        #expect(json.stdout.contains("\"role\" : \"read-only\""))
        // Hidden from listings like every reserved item.
        #expect(!home.unlocked(["ls"]).stdout.contains(".coffer/members"))
        // Adding again changes the role.
        let change = home.unlocked(["members", "add", "ci", ci])
        #expect(change.stderr.contains("changed the member 'ci' (read-write)"), "\(change)")
        let rm = home.unlocked(["members", "rm", "ci"])
        #expect(rm.status == 0, "\(rm)")
        #expect(rm.stderr.contains("removed the member 'ci' and rotated the master key (key epoch 0 → 1)"), "\(rm)")
        #expect(rm.stderr.contains("'ci' keeps everything they already read"), "\(rm)")
        #expect(Self.members(home) == ["bob\tread-write\t\(bob)"])
    }

    @Test("bad input: malformed identity 65, bad name 64, taken identity 73, unknown member 66; the vault unchanged")
    func badInput() {
        let home = TestHome()
        home.initVault()
        let bob = Self.identity(home, "bob")
        #expect(home.unlocked(["members", "add", "bob", bob]).status == 0)
        let before = home.vaultBytes()
        var typo = Array(bob)
        typo[50] = typo[50] == "q" ? "p" : "q"
        let secretLine = "coffer-secret1qyqqzqsrqszsvpcgpy9qkrqdpc83qygjzv2p29shrqv35xcur50p7gppyg3jgffxyu5zj23t9skjutesxyerxdp4xcmnswf68v7r603lrwjal6"
        let cases: [(args: [String], status: Int32, says: String)] = [
            (["add", "eve", String(typo)], 65, "checksum does not match"),
            (["add", "eve", String(bob.dropLast(10))], 65, "checksum does not match"),
            (["add", "eve", "coffer1xyz"], 65, "too short"),
            (["add", "eve", "age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq"], 65, "does not start with coffer1"),
            (["add", "eve", secretLine], 65, "this is a secret identity"),
            (["add", "a b", bob], 64, "invalid member name"),
            (["add", "dave", bob], 73, "already the member 'bob'"),
            (["rm", "nobody"], 66, "no member named 'nobody'"),
        ]
        for c in cases {
            let r = home.unlocked(["members"] + c.args)
            #expect(r.status == c.status, "\(c.args): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: "), "\(r)")
            #expect(r.stderr.contains(c.says), "\(r)")
            #expect(r.stderr.contains("coffer: hint: "), "\(r)")
            #expect(!r.stderr.contains(secretLine.dropFirst(20)), "a secret echoed: \(r)")
        }
        #expect(home.vaultBytes() == before)
        // Removing needs the passphrase itself (a rekey follows): a wrong one
        // is 77 and removes nothing.
        let wrong = home.run(["members", "rm", "bob"], env: ["COFFER_PASSPHRASE": "not the passphrase"])
        #expect(wrong.status == 77, "\(wrong)")
        #expect(home.vaultBytes() == before)
        #expect(Self.members(home) == ["bob\tread-write\t\(bob)"])
    }

    /// Gives each replica an identity kept in its vault and makes both
    /// members (on A): their public identities.
    static func replicaMembers(_ a: TestHome, _ b: TestHome) -> (String, String) {
        let alice = a.unlocked(["identity", "new", "--name", "alice"])
        let bea = b.unlocked(["identity", "new", "--name", "bea"])
        #expect(alice.status == 0 && bea.status == 0, "\(alice) \(bea)")
        SyncFixture.expectOK(a.unlocked(["members", "add", "alice", alice.out]))
        SyncFixture.expectOK(a.unlocked(["members", "add", "bea", bea.out]))
        return (alice.out, bea.out)
    }

    @Test("concurrent membership changes on two replicas merge: different names both stay, a removal wins over a concurrent change")
    func concurrentChangesMerge() {
        let (a, b) = SyncFixture.twoReplicas(dir: "")
        let dir = a.path("sync")
        let bob = Self.identity(a, "bob")
        let bob2 = Self.identity(a, "bob2")
        let dave = Self.identity(a, "dave")
        let erin = Self.identity(a, "erin")
        // Each replica holds a member identity (a shared vault takes only
        // members' signed bundles: docs/sharing.md, "Signed writes").
        let (alice, bea) = Self.replicaMembers(a, b)
        // The registry is made on A and synced, so both replicas hold it.
        SyncFixture.expectOK(a.unlocked(["members", "add", "bob", bob]))
        SyncFixture.expectOK(a.unlocked(["sync", dir]))
        SyncFixture.expectOK(b.unlocked(["sync", dir]))
        #expect(Self.members(b) == ["alice\tread-write\t\(alice)", "bea\tread-write\t\(bea)", "bob\tread-write\t\(bob)"])
        // Concurrently: A adds dave and removes bob; B adds erin and, later
        // (so its write is the newest, the one a conflict would show),
        // changes bob's identity.
        SyncFixture.expectOK(a.unlocked(["members", "add", "dave", dave]))
        SyncFixture.expectOK(a.unlocked(["members", "rm", "bob"]))
        SyncFixture.expectOK(b.unlocked(["members", "add", "erin", erin]))
        usleep(5_000)
        SyncFixture.expectOK(b.unlocked(["members", "add", "bob", bob2, "--read-only"]))
        for _ in 0..<2 {
            SyncFixture.expectOK(a.unlocked(["sync", dir]))
            SyncFixture.expectOK(b.unlocked(["sync", dir]))
        }
        let expected = ["alice\tread-write\t\(alice)", "bea\tread-write\t\(bea)", "dave\tread-write\t\(dave)", "erin\tread-write\t\(erin)"]
        #expect(Self.members(a) == expected)
        #expect(Self.members(b) == expected)
    }

    @Test("the same name added concurrently with two identities: one value on every replica, flagged, settled by adding again")
    func concurrentAddsOfOneName() {
        let (a, b) = SyncFixture.twoReplicas(dir: "")
        let dir = a.path("sync")
        let one = Self.identity(a, "one")
        let two = Self.identity(a, "two")
        _ = Self.replicaMembers(a, b)
        SyncFixture.expectOK(a.unlocked(["sync", dir]))
        SyncFixture.expectOK(b.unlocked(["sync", dir]))
        SyncFixture.expectOK(a.unlocked(["members", "add", "carol", one]))
        SyncFixture.expectOK(b.unlocked(["members", "add", "carol", two]))
        for _ in 0..<2 {
            SyncFixture.expectOK(a.unlocked(["sync", dir]))
            SyncFixture.expectOK(b.unlocked(["sync", dir]))
        }
        let onA = Self.members(a).filter { $0.hasPrefix("carol\t") }
        #expect(onA.count == 1)
        #expect(onA.first?.hasSuffix("\t(conflict)") == true, "\(onA)")
        #expect(Self.members(b).filter { $0.hasPrefix("carol\t") } == onA)
        SyncFixture.expectOK(b.unlocked(["members", "add", "carol", two]))
        SyncFixture.expectOK(b.unlocked(["sync", dir]))
        SyncFixture.expectOK(a.unlocked(["sync", dir]))
        #expect(Self.members(a).filter { $0.hasPrefix("carol\t") } == ["carol\tread-write\t\(two)"])
    }
}

/// Bundle format 5 from the command line: a vault with members writes its
/// master key sealed to them, and `inspect` says to how many.
@Suite("sealed keys, black-box")
struct SealedKeyCLITests {
    @Test("export of a vault with members is format 5 and inspect counts the sealed keys; without members format 4")
    func exportAndInspect() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["export", "--out", home.path("before.cb")]).status == 0)
        let plain = home.run(["inspect", home.path("before.cb"), "--json"])
        #expect(plain.stdout.contains("\"formatVersion\" : 4"), "\(plain)")
        #expect(!plain.stdout.contains("sealedKeys"))
        for name in ["bob", "ci"] {
            let id = MembersCLITests.identity(home, name)
            #expect(home.unlocked(["members", "add", name, id]).status == 0)
        }
        #expect(home.unlocked(["export", "--out", home.path("after.cb")]).status == 0)
        let text = home.run(["inspect", home.path("after.cb")])
        #expect(text.stdout.contains("format:     5"), "\(text)")
        #expect(text.stdout.contains("sealed to:  2 members"), "\(text)")
        let json = home.run(["inspect", home.path("after.cb"), "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "inspect.schema.json")
        #expect(json.stdout.contains("\"sealedKeys\" : 2"), "\(json)")
        // The passphrase still clones it, members and all.
        let clone = home.unlocked(["clone", home.path("after.cb"), "--vault", home.path("c.coffer")])
        #expect(clone.status == 0, "\(clone)")
        #expect(home.unlocked(["members", "ls", "--vault", home.path("c.coffer")]).stdout.split(separator: "\n").count == 2)
    }
}
