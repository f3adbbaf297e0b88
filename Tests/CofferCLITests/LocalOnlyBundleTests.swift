import CofferTestSupport
import Foundation
import Testing

@Suite("local-only items never enter a bundle, black-box")
struct LocalOnlyBundleTests {
    /// A local-only secret is absent from an exported bundle: the bundle
    /// is decrypted (by cloning it into a new replica with the passphrase)
    /// and every value of every item and its history is searched.
    @Test func localOnlySecretIsAbsentFromTheDecryptedBundle() throws {
        let home = TestHome()
        home.initVault()
        let deviceSecret = "DEVICE-ONLY-" + UUID().uuidString
        let syncedSecret = "SYNCED-" + UUID().uuidString
        #expect(home.unlocked(["add", "device/key", "--local-only", "--source", "ollama"], stdin: deviceSecret).status == 0)
        #expect(home.unlocked(["add", "shared/key", "--source", "ads"], stdin: syncedSecret).status == 0)
        // An edit that does not mention the policy keeps it local-only.
        #expect(home.unlocked(["edit", "device/key", "--secret", "key"], stdin: deviceSecret + "-v2").status == 0)
        // A registered manifest travels like any sync item.
        let req = home.path("app.json")
        _ = FileManager.default.createFile(
            atPath: req, contents: Data(#"{"version": 1, "sources": [{"id": "ads", "type": "api-key", "required": true}]}"#.utf8))
        #expect(home.unlocked(["requirements", "add", req]).status == 0)

        let bundle = home.path("out.bundle")
        let export = home.unlocked(["export", "--out", bundle])
        #expect(export.status == 0, "\(export)")
        let raw = try Data(contentsOf: URL(fileURLWithPath: bundle))
        #expect(raw.range(of: Data(deviceSecret.utf8)) == nil)

        // Decrypt: clone the bundle into a fresh replica.
        let clonePath = home.path("clone/vault.coffer")
        let clone = home.unlocked(["clone", bundle, "--vault", clonePath])
        #expect(clone.status == 0, "\(clone)")
        let ls = home.unlocked(["ls", "--vault", clonePath])
        #expect(ls.stdout.contains("shared/key"))
        #expect(!ls.stdout.contains("device/key"), "\(ls)")
        #expect(home.unlocked(["get", "shared/key", "--vault", clonePath]).stdout == syncedSecret + "\n")
        #expect(home.unlocked(["get", "device/key", "--vault", clonePath]).status == 66)
        #expect(home.unlocked(["requirements", "ls", "--vault", clonePath]).stdout.contains("app"))

        // Search every decrypted value of every item and its history.
        var everything = ""
        for line in ls.stdout.split(separator: "\n") {
            let name = String(line.split(separator: " ")[0])
            everything += home.unlocked(["get", name, "--json", "--vault", clonePath]).stdout
            everything += home.unlocked(["history", name, "--show-secrets", "--json", "--vault", clonePath]).stdout
        }
        everything += home.unlocked(["requirements", "show", "app", "--vault", clonePath]).stdout
        #expect(everything.contains(syncedSecret), "the search does see decrypted values")
        #expect(!everything.contains("DEVICE-ONLY-"), "a local-only value reached the other replica")
    }

    /// Switching an item to local-only keeps it out of later bundles;
    /// switching back puts it in.
    @Test func switchingPolicyIsHonouredByExport() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "k"], stdin: "VALUE-K").status == 0)
        #expect(home.unlocked(["edit", "k", "--policy", "local-only"]).status == 0)
        let b1 = home.path("b1.bundle")
        #expect(home.unlocked(["export", "--out", b1]).status == 0)
        let c1 = home.path("c1/vault.coffer")
        #expect(home.unlocked(["clone", b1, "--vault", c1]).status == 0)
        #expect(home.unlocked(["get", "k", "--vault", c1]).status == 66)

        #expect(home.unlocked(["edit", "k", "--policy", "sync"]).status == 0)
        let b2 = home.path("b2.bundle")
        #expect(home.unlocked(["export", "--out", b2]).status == 0)
        let c2 = home.path("c2/vault.coffer")
        #expect(home.unlocked(["clone", b2, "--vault", c2]).status == 0)
        #expect(home.unlocked(["get", "k", "--vault", c2]).stdout == "VALUE-K\n")
    }

    /// Registered manifests sync like items: manifests registered on two
    /// replicas merge (one registry item, one field per manifest), and two
    /// registry items created concurrently are read as one and healed on
    /// the next registration.
    @Test func registeredManifestsSyncBetweenReplicas() throws {
        let home = TestHome()
        home.initVault()
        func manifest(_ id: String) -> String {
            let p = home.path("\(id).json")
            _ = FileManager.default.createFile(atPath: p, contents: Data(#"{"version": 1, "sources": [{"id": "\#(id)", "type": "api-key"}]}"#.utf8))
            return p
        }
        let a = home.vaultPath
        let b = home.path("b/vault.coffer")
        let b0 = home.path("b0.bundle")
        #expect(home.unlocked(["add", "seed"], stdin: "v").status == 0)
        #expect(home.unlocked(["export", "--out", b0]).status == 0)
        #expect(home.unlocked(["clone", b0, "--vault", b]).status == 0)
        func sync() {
            let fa = home.path("a.bundle")
            let fb = home.path("b.bundle")
            #expect(home.unlocked(["export", "--out", fa, "--vault", a]).status == 0)
            #expect(home.unlocked(["export", "--out", fb, "--vault", b]).status == 0)
            #expect(home.unlocked(["import", fb, "--vault", a]).status == 0)
            #expect(home.unlocked(["import", fa, "--vault", b]).status == 0)
        }
        func registered(_ vault: String) -> String { home.unlocked(["requirements", "ls", "--vault", vault]).stdout }

        // Concurrent first registrations create two registry items.
        #expect(home.unlocked(["requirements", "add", manifest("x"), "--vault", a]).status == 0)
        #expect(home.unlocked(["requirements", "add", manifest("y"), "--vault", b]).status == 0)
        sync()
        for v in [a, b] {
            #expect(registered(v) == "x  1 source: x\ny  1 source: y\n", "\(registered(v))")
            #expect(home.unlocked(["ls", "--vault", v]).stdout.split(separator: "\n").count == 1, "registry stays hidden")
        }
        // The next registration heals them into one; it syncs.
        #expect(home.unlocked(["requirements", "add", manifest("z"), "--vault", a]).status == 0)
        #expect(home.unlocked(["requirements", "add", manifest("w"), "--vault", b]).status == 0)
        sync()
        for v in [a, b] {
            #expect(registered(v) == "w  1 source: w\nx  1 source: x\ny  1 source: y\nz  1 source: z\n", "\(registered(v))")
        }
        // A removal syncs too.
        #expect(home.unlocked(["requirements", "rm", "x", "--vault", b]).status == 0)
        sync()
        #expect(!registered(a).contains("x  "))
    }
}
