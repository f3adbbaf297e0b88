import CofferTestSupport
import Foundation
import Testing

/// Edits of sync's bookkeeping tables made with `sqlite3` alone (no key),
/// as an attacker with write access to the vault file would make them
/// (issue 12, format 4). What each could achieve if it went unnoticed:
/// - `localExport` raised: a restored backup is no longer recognised by the
///   sync folder, so its next writes reuse dots the lost writes had, and
///   every other replica ignores them as already seen;
/// - `localExport` lowered or deleted: the file takes itself for a restored
///   backup and moves published writes to a new id (duplicates shown as
///   conflicts), and making an item local-only moves published writes;
/// - `localOnlyWriter` set to another replica's id (or this one's): the
///   next write of the local-only item takes that replica's next dot, so
///   its real write with that dot is dropped everywhere as already seen.
/// Each must be refused by `export` and `sync` (exit 65, "vault file was
/// modified outside coffer", nothing written) and named by `verify`.
@Suite("sync bookkeeping tampering, black-box")
struct SyncBookkeepingTamperingTests {
    static func query(_ path: String, _ sql: String) -> String {
        let r = Spawn.run("/usr/bin/sqlite3", [path, sql], stdin: nil, fd3: nil, environment: [:], workDir: "/")
        #expect(r.status == 0, "sqlite3 failed: \(r)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A vault with a synced and a local-only item that has exported once
    /// (so `localExport` has its row).
    func exportedHome() -> TestHome {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "shared/key"], stdin: "SHARED-SECRET\n").status == 0)
        #expect(home.unlocked(["add", "device/key", "--local-only"], stdin: "DEVICE-SECRET\n").status == 0)
        #expect(home.unlocked(["export", "--out", home.path("first.cb")]).status == 0)
        #expect(Self.query(home.vaultPath, "SELECT count(*) FROM localExport") == "1")
        #expect(Self.query(home.vaultPath, "SELECT count(*) FROM localOnlyWriter") == "1")
        #expect(home.unlocked(["verify"]).status == 0)
        return home
    }

    /// export, sync (dry run and real) refuse; nothing lands in the folder;
    /// verify names the table.
    func expectRefusedAndNamed(_ home: TestHome, naming table: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bundle = home.path("after.cb")
        VaultTamperingTests.expectModified(
            home.unlocked(["export", "--out", bundle]), notShowing: ["SHARED-SECRET", "DEVICE-SECRET"], sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: bundle), sourceLocation: sourceLocation)
        let dir = home.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for args in [["sync", dir, "--dry-run"], ["sync", dir]] {
            VaultTamperingTests.expectModified(home.unlocked(args), sourceLocation: sourceLocation)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, sourceLocation: sourceLocation)
        let v = home.unlocked(["verify"])
        #expect(v.status == 65, "\(v)", sourceLocation: sourceLocation)
        #expect(v.stderr.contains("sync's bookkeeping") && v.stderr.contains(table), "\(v)", sourceLocation: sourceLocation)
        let j = home.unlocked(["verify", "--json"])
        #expect(j.status == 65, sourceLocation: sourceLocation)
        SchemaValidation.expectValid(j.stdout, schema: "verify.schema.json")
        #expect(j.stdout.contains("vault-mac"), sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        "UPDATE localExport SET counter = counter + 1000;",
        "UPDATE localExport SET counter = 0;",
        "UPDATE localExport SET replicaId = randomblob(16);",
        "DELETE FROM localExport;",
    ])
    func anEditedExportMarkIsRefused(_ statement: String) throws {
        let home = exportedHome()
        VaultTamperingTests.sql(home.vaultPath, statement)
        try expectRefusedAndNamed(home, naming: "localExport")
    }

    @Test(arguments: [
        "UPDATE localOnlyWriter SET replicaId = (SELECT replicaId FROM localReplica);",
        "UPDATE localOnlyWriter SET replicaId = randomblob(16);",
        "DELETE FROM localOnlyWriter;",
        "INSERT INTO localOnlyWriter SELECT itemId, randomblob(16) FROM item WHERE policy = 'sync';",
    ])
    func anEditedPrivateWriterIsRefused(_ statement: String) throws {
        let home = exportedHome()
        VaultTamperingTests.sql(home.vaultPath, statement)
        try expectRefusedAndNamed(home, naming: "localOnlyWriter")
    }

    /// The attack in full: the local-only item is given a peer's replica id
    /// as its writer, and the vault is written to (an ordinary edit), which
    /// takes the peer's next dot. The next sync refuses before merging or
    /// publishing anything, so the peer's real write is not censored.
    @Test func aLocalOnlyItemReattributedToAPeerIsCaughtBeforeSync() throws {
        let home = exportedHome()
        let peer = home.path("peer/vault.coffer")
        #expect(home.unlocked(["clone", home.path("first.cb"), "--vault", peer]).status == 0)
        let peerID = Self.query(peer, "SELECT hex(replicaId) FROM localReplica")
        #expect(peerID.count == 32)
        VaultTamperingTests.sql(home.vaultPath, "UPDATE localOnlyWriter SET replicaId = X'\(peerID)';")
        #expect(home.unlocked(["edit", "device/key", "--secret", "key"], stdin: "DEVICE-SECRET-2\n").status == 0)
        try expectRefusedAndNamed(home, naming: "localOnlyWriter")
    }
}
