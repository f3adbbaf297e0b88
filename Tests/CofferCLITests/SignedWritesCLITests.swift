import CofferTestSupport
import Foundation
import Testing

/// Signed writes through the `coffer` binary (docs/sharing.md, "Signed
/// writes"): alice (the default vault), bob (b.coffer) and carol
/// (c.coffer), each with the identity kept in their own vault.
@Suite("coffer: signed writes")
struct SignedWritesCLITests {
    static func team() -> (home: TestHome, bob: String, carol: String) {
        let home = TestHome()
        home.initVault()
        let alice = home.unlocked(["identity", "new", "--name", "alice"])
        #expect(alice.status == 0, "\(alice)")
        #expect(home.unlocked(["members", "add", "alice", alice.out]).status == 0)
        #expect(home.unlocked(["export", "--out", "a0.cb"]).status == 0)
        var ids: [String] = []
        for (name, vault) in [("bob", "b.coffer"), ("carol", "c.coffer")] {
            #expect(home.unlocked(["clone", "a0.cb", "--vault", vault]).status == 0)
            let id = home.unlocked(["identity", "new", "--name", name, "--vault", vault])
            #expect(id.status == 0, "\(id)")
            ids.append(id.out)
        }
        #expect(home.unlocked(["members", "add", "bob", ids[0]]).status == 0)
        #expect(home.unlocked(["members", "add", "carol", ids[1], "--read-only"]).status == 0)
        #expect(home.unlocked(["export", "--out", "a1.cb"]).status == 0)
        for vault in ["b.coffer", "c.coffer"] {
            let r = home.unlocked(["import", "a1.cb", "--vault", vault])
            #expect(r.status == 0, "\(r)")
        }
        return (home, ids[0], ids[1])
    }

    @Test("a member's bundles are signed and taken; a flipped signature and an older file are refused (65), the vault unchanged")
    func signedBundles() throws {
        let (home, _, _) = Self.team()
        #expect(home.unlocked(["add", "svc/b", "--type", "api-key", "--field", "key=one", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "b1.cb", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["add", "svc/b2", "--type", "api-key", "--field", "key=two", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "b2.cb", "--vault", "b.coffer"]).status == 0)
        let info = home.run(["inspect", "b2.cb", "--json"])
        #expect(info.stdout.contains("\"formatVersion\" : 6"), "\(info)")
        var flipped = try Data(contentsOf: URL(fileURLWithPath: home.path("b2.cb")))
        flipped[flipped.count - 3] ^= 0x01
        try flipped.write(to: URL(fileURLWithPath: home.path("flipped.cb")))
        let before = home.vaultBytes()
        let bad = home.unlocked(["import", "flipped.cb"])
        #expect(bad.status == 65, "\(bad)")
        #expect(bad.stderr.contains("breaks the bundle rule signature"), "\(bad)")
        #expect(bad.stderr.contains("coffer: hint: "), "\(bad)")
        #expect(home.vaultBytes() == before)
        let ok = home.unlocked(["import", "b2.cb"])
        #expect(ok.status == 0, "\(ok)")
        #expect(home.unlocked(["get", "svc/b2"]).stdout == "two\n")
        // The same file again is no older file: a no-op, as before sharing
        // (a folder's file that is merged again, a bundle imported twice).
        let again = home.unlocked(["import", "b2.cb"])
        #expect(again.status == 0, "\(again)")
        #expect(again.stderr.contains("0 added, 0 changed"), "\(again)")
        // Attribution: bob's replica is bound to bob.
        let history = home.unlocked(["history", "svc/b2"])
        #expect(history.stdout.contains("key = (secret)  (by bob)"), "\(history)")
        let hjson = home.unlocked(["history", "svc/b2", "--json"])
        SchemaValidation.expectValid(hjson.stdout, schema: "history.schema.json")
        #expect(hjson.stdout.contains("\"member\" : \"bob\""), "\(hjson)")
        let show = home.unlocked(["show", "svc/b2"])
        #expect(show.stdout.contains("(bob)"), "\(show)")
        let sjson = home.unlocked(["show", "svc/b2", "--json"])
        SchemaValidation.expectValid(sjson.stdout, schema: "show.schema.json")
        #expect(sjson.stdout.contains("\"lastWrittenByMember\" : \"bob\""), "\(sjson)")
        // alice's own writes are hers; a vault without members names no one.
        #expect(home.unlocked(["add", "svc/a", "--type", "api-key", "--field", "key=mine"]).status == 0)
        #expect(home.unlocked(["history", "svc/a"]).stdout.contains("(by alice)"))
        let solo = TestHome()
        solo.initVault()
        #expect(solo.unlocked(["add", "svc/s", "--type", "api-key", "--field", "key=s"]).status == 0)
        #expect(!solo.unlocked(["history", "svc/s"]).stdout.contains("(by "))
        #expect(!solo.unlocked(["show", "svc/s", "--json"]).stdout.contains("lastWrittenByMember"))
        let afterNewer = home.vaultBytes()
        let old = home.unlocked(["import", "b1.cb"])
        #expect(old.status == 65, "\(old)")
        #expect(old.stderr.contains("publication-counter") && old.stderr.contains("served an older file"), "\(old)")
        #expect(home.vaultBytes() == afterNewer)
    }

    @Test("a read-only member's replica publishes nothing (77); its older signed file is refused everywhere (65)")
    func readOnlyMember() {
        let (home, _, _) = Self.team()
        #expect(home.unlocked(["add", "ci/x", "--type", "api-key", "--field", "key=ci", "--vault", "c.coffer"]).status == 0)
        let r = home.unlocked(["export", "--out", "c1.cb", "--vault", "c.coffer"])
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.contains("this identity is read-only in this vault"), "\(r)")
        #expect(!FileManager.default.fileExists(atPath: home.path("c1.cb")))
        // sync merges the others' files into it and writes nothing of its own.
        #expect(home.unlocked(["add", "svc/a", "--type", "api-key", "--field", "key=from-alice"]).status == 0)
        let a = home.unlocked(["sync", home.path("shared")])
        #expect(a.status == 0, "\(a)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: home.path("shared"))) ?? []
        let s = home.unlocked(["sync", home.path("shared"), "--vault", "c.coffer"])
        #expect(s.status == 0, "\(s)")
        #expect(s.stderr.contains("this identity is read-only in this vault"), "\(s)")
        #expect(home.unlocked(["get", "svc/a", "--vault", "c.coffer"]).stdout == "from-alice\n")
        #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: home.path("shared"))) ?? []) == Set(files))
    }

    @Test("no bundle makes its own signer a member: a read-only member promoting itself, a passphrase holder adding itself (65, signer-member)")
    func noSelfGrantedMembership() throws {
        let (home, _, carolPublic) = Self.team()
        // carol is read-only; in her own replica she makes herself read-write and signs.
        #expect(home.unlocked(["members", "add", "carol", carolPublic, "--vault", "c.coffer"]).status == 0)
        #expect(home.unlocked(["add", "svc/c", "--type", "api-key", "--field", "key=carol", "--vault", "c.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "c1.cb", "--vault", "c.coffer"]).status == 0)
        #expect(home.run(["inspect", "c1.cb"]).stdout.contains("format:     6"))
        // mallory knows the passphrase, adds an identity of her own and signs.
        #expect(home.unlocked(["clone", "a1.cb", "--vault", "m.coffer"]).status == 0)
        let mallory = home.unlocked(["identity", "new", "--name", "mallory", "--vault", "m.coffer"])
        #expect(home.unlocked(["members", "add", "mallory", mallory.out, "--vault", "m.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "m1.cb", "--vault", "m.coffer"]).status == 0)
        for vault in ["default", "b.coffer"] {
            let v = vault == "default" ? [] : ["--vault", vault]
            let before = home.vaultBytes(vault == "default" ? nil : home.path(vault))
            let members = home.unlocked(["members", "ls"] + v).stdout
            for (file, phrase) in [
                ("c1.cb", "who was read-only member 'carol' of this vault before this bundle"), ("m1.cb", "'mallory', who was not a member"),
            ] {
                let r = home.unlocked(["import", file] + v)
                #expect(r.status == 65, "\(vault) \(file): \(r)")
                #expect(r.stderr.contains("breaks the bundle rule signer-member") && r.stderr.contains(phrase), "\(r)")
                #expect(r.stderr.contains("coffer: hint: "), "\(r)")
            }
            #expect(home.vaultBytes(vault == "default" ? nil : home.path(vault)) == before)
            #expect(home.unlocked(["members", "ls"] + v).stdout == members)
        }
    }

    @Test("conflicts name the member behind each side (text and JSON)")
    func conflictsAreAttributed() throws {
        let (home, _, _) = Self.team()
        #expect(home.unlocked(["add", "svc/x", "--type", "custom", "--field", "owner=none"]).status == 0)
        #expect(home.unlocked(["export", "--out", "a2.cb"]).status == 0)
        #expect(home.unlocked(["import", "a2.cb", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["edit", "svc/x", "--field", "owner=alice"]).status == 0)
        #expect(home.unlocked(["edit", "svc/x", "--field", "owner=bob", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["export", "--out", "b3.cb", "--vault", "b.coffer"]).status == 0)
        #expect(home.unlocked(["import", "b3.cb"]).status == 0)
        let text = home.unlocked(["conflicts"]).stdout
        #expect(text.contains("(alice)  alice") && text.contains("(bob)  bob"), "\(text)")
        let json = home.unlocked(["conflicts", "--json"]).stdout
        SchemaValidation.expectValid(json, schema: "conflicts.schema.json")
        #expect(json.contains("\"member\" : \"alice\"") && json.contains("\"member\" : \"bob\""), "\(json)")
        let solo = TestHome()
        solo.initVault()
        #expect(!solo.unlocked(["conflicts", "--json"]).stdout.contains("member"))
    }
}
