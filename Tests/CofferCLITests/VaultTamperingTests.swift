import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Edits of a vault file made with `sqlite3` alone, without any key, as an
/// attacker with write access to the file would make them (issue 12). Each
/// must be refused with exit 65 and "vault file was modified outside
/// coffer", never serve another item's secret, and never end coffer with a
/// signal. docs/threat-model.md lists which test shows what.
@Suite("vault file tampering, black-box")
struct VaultTamperingTests {
    /// Runs SQL on a vault file with the sqlite3 program (no key).
    static func sql(_ path: String, _ statements: String) {
        let r = Spawn.run("/usr/bin/sqlite3", [path, statements], stdin: nil, fd3: nil, environment: [:], workDir: "/")
        precondition(r.status == 0, "sqlite3 failed: \(r)")
    }

    /// Moves every history version back into `fieldVersion` in place of
    /// the current one: a rotated-out value made current again.
    static let moveHistoryBack = """
        DELETE FROM fieldVersion WHERE EXISTS (SELECT 1 FROM fieldHistory h
          WHERE h.itemId = fieldVersion.itemId AND h.registerId = fieldVersion.registerId);
        INSERT INTO fieldVersion SELECT itemId, registerId, replicaId, counter, vector, writtenAt, isTombstone, payload FROM fieldHistory;
        DELETE FROM fieldHistory;
        """

    static func expectModified(_ r: CLIResult, notShowing secrets: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 65, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains("vault file was modified outside coffer"), "\(r)", sourceLocation: sourceLocation)
        for s in secrets {
            #expect(!r.stdout.contains(s) && !r.stderr.contains(s), "a secret was printed: \(r)", sourceLocation: sourceLocation)
        }
    }

    func home(_ items: [(String, String)], extra: [String] = []) -> TestHome {
        let home = TestHome()
        home.initVault()
        for (name, secret) in items {
            let r = home.unlocked(["add", name, "--type", "api-key", "--secret", "key"] + extra, stdin: secret + "\n")
            #expect(r.status == 0, "add failed: \(r)")
        }
        return home
    }

    @Test func aSoundVaultVerifies() throws {
        let home = home([("a", "SECRET-A"), ("b", "SECRET-B")])
        #expect(home.unlocked(["edit", "a", "--secret", "key"], stdin: "SECRET-A2\n").status == 0)
        #expect(home.unlocked(["rm", "b"]).status == 0)
        let r = home.unlocked(["verify"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("vault verified: 2 items"))
        let j = home.unlocked(["verify", "--json"])
        #expect(j.status == 0, "\(j)")
        SchemaValidation.expectValid(j.stdout, schema: "verify.schema.json")
        #expect(j.stdout.contains("\"sound\":true") || j.stdout.contains("\"sound\" : true"))
    }

    /// Swapping `item.nameHash` of two items made `get a` print b's secret.
    @Test func swappedNameHashesAreRefused() throws {
        let home = home([("a", "SECRET-A"), ("b", "SECRET-B")])
        Self.sql(
            home.vaultPath,
            """
            CREATE TEMP TABLE h AS SELECT itemId, nameHash FROM item;
            UPDATE item SET nameHash = (SELECT h.nameHash FROM h WHERE h.itemId != item.itemId);
            """)
        Self.expectModified(home.unlocked(["get", "a"]), notShowing: ["SECRET-A", "SECRET-B"])
        Self.expectModified(home.unlocked(["read", "coffer://b/key"]), notShowing: ["SECRET-A", "SECRET-B"])
        let v = home.unlocked(["verify", "--json"])
        #expect(v.status == 65)
        SchemaValidation.expectValid(v.stdout, schema: "verify.schema.json")
        #expect(v.stdout.contains("name-index"))
    }

    /// `UPDATE item SET policy='sync'` made the next export carry a
    /// local-only item.
    @Test func aLocalOnlyItemMadeSyncIsNotExported() throws {
        let home = home([("device/key", "DEVICE-SECRET")], extra: ["--local-only"])
        Self.sql(home.vaultPath, "UPDATE item SET policy = 'sync';")
        let bundle = home.path("out.cb")
        Self.expectModified(home.unlocked(["export", "--out", bundle]))
        #expect(!FileManager.default.fileExists(atPath: bundle))
        Self.expectModified(home.unlocked(["get", "device/key"]), notShowing: ["DEVICE-SECRET"])
    }

    /// Moving an old history row back into fieldVersion made `get` show a
    /// rotated-out key.
    @Test func aHistoryVersionMovedBackIsRefused() throws {
        let home = home([("a", "OLD-KEY")])
        #expect(home.unlocked(["edit", "a", "--secret", "key"], stdin: "NEW-KEY\n").status == 0)
        Self.sql(home.vaultPath, Self.moveHistoryBack)
        Self.expectModified(home.unlocked(["get", "a"]), notShowing: ["OLD-KEY", "NEW-KEY"])
        Self.expectModified(home.unlocked(["history", "a", "--show-secrets"]), notShowing: ["OLD-KEY", "NEW-KEY"])
    }

    /// Raising a replica's counter would make its later bundles import as
    /// "unchanged" forever.
    @Test func aRaisedReplicaCounterIsDetected() throws {
        let home = home([("a", "SECRET-A")])
        Self.sql(home.vaultPath, "UPDATE replica SET counter = counter + 1000;")
        Self.expectModified(home.unlocked(["export", "--out", home.path("x.cb")]))
        let v = home.unlocked(["verify"])
        #expect(v.status == 65)
        #expect(v.stderr.contains("vault MAC does not match"))
    }

    /// Flipping `isDeleted` brought a deleted item back.
    @Test func aFlippedDeletedFlagIsRefused() throws {
        let home = home([("a", "SECRET-A"), ("b", "SECRET-B")])
        #expect(home.unlocked(["rm", "a"]).status == 0)
        Self.sql(home.vaultPath, "UPDATE item SET isDeleted = 0;")
        Self.expectModified(home.unlocked(["get", "a"]), notShowing: ["SECRET-A"])
        Self.expectModified(home.unlocked(["ls"]))
    }

    /// Deleting a current version, or a whole item.
    @Test func deletedRowsAreDetected() throws {
        let home = home([("a", "SECRET-A"), ("b", "SECRET-B")])
        Self.sql(
            home.vaultPath,
            """
            DELETE FROM fieldVersion WHERE itemId = (SELECT itemId FROM item LIMIT 1)
              AND registerId = (SELECT registerId FROM fieldVersion WHERE itemId = (SELECT itemId FROM item LIMIT 1) LIMIT 1);
            """)
        let first = home.unlocked(["verify"])
        #expect(first.status == 65, "\(first)")
        #expect(first.stderr.contains("differ from its integrity record"))

        let other = self.home([("a", "SECRET-A"), ("b", "SECRET-B")])
        Self.sql(
            other.vaultPath,
            """
            CREATE TEMP TABLE gone AS SELECT itemId FROM item LIMIT 1;
            DELETE FROM fieldVersion WHERE itemId IN (SELECT itemId FROM gone);
            DELETE FROM item WHERE itemId IN (SELECT itemId FROM gone);
            """)
        Self.expectModified(other.unlocked(["export", "--out", other.path("x.cb")]))
        #expect(other.unlocked(["verify"]).status == 65)
    }

    /// Issue 24 item 9: deleting only an `item` row (its versions and
    /// history left behind) took its name index with it, so `get` said
    /// "no item named" (66) as if the item had never existed.
    @Test func aDeletedItemRowIsNotReportedAsMissing() throws {
        let home = home([("a", "SECRET-A"), ("b", "SECRET-B")])
        #expect(home.unlocked(["edit", "a", "--secret", "key"], stdin: "SECRET-A2\n").status == 0)
        Self.sql(home.vaultPath, "PRAGMA foreign_keys = OFF; DELETE FROM item WHERE nameHash = (SELECT nameHash FROM item ORDER BY itemId LIMIT 1);")
        let before = home.vaultBytes()
        for args in [["get", "a"], ["get", "b"], ["read", "coffer://a/key"], ["read", "coffer://b/key"]] {
            let r = home.unlocked(args)
            // The item whose row is gone is refused as tampering, never as
            // a missing name; the other one may still be served.
            if r.status != 0 {
                Self.expectModified(r, notShowing: ["SECRET-A", "SECRET-A2", "SECRET-B"])
                #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(r)")
            }
        }
        let missing = ["a", "b"].filter { home.unlocked(["get", $0]).status != 0 }
        #expect(missing.count == 1, "exactly one item lost its row: \(missing)")
        // An unknown name in a sound vault is still 66.
        #expect(home.vaultBytes() == before)
        let v = home.unlocked(["verify"])
        #expect(v.status == 65, "\(v)")
        let clean = self.home([("c", "SECRET-C")])
        let miss = clean.unlocked(["get", "nope"])
        #expect(miss.status == 66, "\(miss)")
        #expect(miss.stderr.contains("no item named 'nope'"), "\(miss)")
    }

    /// Issue 24 item 9: a trigger, a view or WAL mode planted with sqlite3
    /// passed `verify`. Each is reported now (check "schema"), naming it.
    @Test(arguments: [
        ("CREATE TRIGGER keep_sync AFTER UPDATE ON localReplica BEGIN UPDATE item SET policy = 'sync'; END;", "trigger 'keep_sync'"),
        ("CREATE VIEW peek AS SELECT itemId FROM item;", "view 'peek'"),
        ("CREATE INDEX extra ON fieldVersion(writtenAt);", "index 'extra'"),
        (
            "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = replace(sql, 'CHECK (counter >= 0)', '') WHERE name = 'replica';",
            "table 'replica' is defined differently"
        ),
        ("PRAGMA journal_mode = WAL;", "WAL"),
    ])
    func plantedSchemaObjectsAreReportedByVerify(_ statement: String, _ named: String) throws {
        let home = home([("a", "SECRET-A")])
        Self.sql(home.vaultPath, statement)
        let v = home.unlocked(["verify"])
        #expect(v.status == 65, "\(statement): \(v)")
        #expect(v.stderr.contains(named), "\(v)")
        #expect(v.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(v)")
        let j = home.unlocked(["verify", "--json"])
        #expect(j.status == 65, "\(j)")
        SchemaValidation.expectValid(j.stdout, schema: "verify.schema.json")
        #expect(j.stdout.contains("\"schema\""), "\(j)")
    }

    /// A trigger fires on coffer's own writes (this one would make every
    /// local-only item `sync` at the next write, and rewrite rows after the
    /// vault MAC was computed): any command that opens the vault refuses
    /// it before reading or writing anything.
    @Test func aPlantedTriggerIsRefusedAtOpen() throws {
        let home = home([("device/key", "DEVICE-SECRET")], extra: ["--local-only"])
        Self.sql(home.vaultPath, "CREATE TRIGGER keep_sync AFTER UPDATE ON localReplica BEGIN UPDATE item SET policy = 'sync'; END;")
        let before = home.vaultBytes()
        for args in [["get", "device/key"], ["add", "x", "--secret", "key"], ["ls"], ["export", "--out", home.path("x.cb")]] {
            let r = home.unlocked(args, stdin: "X\n")
            Self.expectModified(r, notShowing: ["DEVICE-SECRET"])
            #expect(r.stderr.contains("trigger 'keep_sync'"), "\(r)")
            #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(r)")
        }
        #expect(home.vaultBytes() == before)
        #expect(!FileManager.default.fileExists(atPath: home.path("x.cb")))
        // A view or WAL mode changes no row coffer writes: ordinary
        // commands go on (verify names them).
        let other = self.home([("a", "SECRET-A")])
        Self.sql(other.vaultPath, "CREATE VIEW peek AS SELECT itemId FROM item;")
        #expect(other.unlocked(["get", "a"]).out == "SECRET-A")
    }

    /// Rows copied from another replica of the same vault (same key, same
    /// vault id) pass the per-item checks but not the vault MAC.
    @Test func rowsCopiedFromAnotherReplicaAreDetected() throws {
        let home = home([("a", "SECRET-A")])
        #expect(home.unlocked(["export", "--out", home.path("full.cb")]).status == 0)
        let b = home.path("b.coffer")
        let cl = home.unlocked(["clone", home.path("full.cb"), "--vault", b])
        #expect(cl.status == 0, "\(cl)")
        #expect(home.unlocked(["add", "from-b", "--vault", b, "--secret", "key"], stdin: "SECRET-FROM-B\n").status == 0)
        Self.sql(
            home.vaultPath,
            """
            ATTACH '\(b)' AS b;
            INSERT INTO item SELECT * FROM b.item WHERE itemId NOT IN (SELECT itemId FROM main.item);
            INSERT INTO fieldVersion SELECT * FROM b.fieldVersion WHERE itemId NOT IN (SELECT itemId FROM main.fieldVersion);
            """)
        Self.expectModified(home.unlocked(["export", "--out", home.path("x.cb")]))
        #expect(home.unlocked(["verify"]).status == 65)
        Self.expectModified(home.unlocked(["import", home.path("full.cb")]))
    }

    /// Schema edits and out-of-range numbers trapped GRDB's subscripts or
    /// an integer conversion (SIGILL, exit 132).
    @Test(arguments: [
        "ALTER TABLE vault RENAME COLUMN formatVersion TO J;",
        "UPDATE vault SET kdfIterations = 5000000000;",
        "PRAGMA ignore_check_constraints = 1; UPDATE vault SET kdfMemoryKiB = -1;",
        "PRAGMA ignore_check_constraints = 1; UPDATE localReplica SET counter = -5;",
        "PRAGMA ignore_check_constraints = 1; UPDATE replica SET counter = -5;",
        "UPDATE item SET createdAt = 'soon';",
        "UPDATE item SET isDeleted = 7;",
        "PRAGMA ignore_check_constraints = 1; UPDATE fieldVersion SET counter = 'x' WHERE isTombstone = 0;",
        "ALTER TABLE item RENAME COLUMN isDeleted TO gone;",
        "ALTER TABLE fieldVersion RENAME COLUMN payload TO p;",
        "DROP TABLE vaultIntegrity;",
        "UPDATE item SET record = NULL;",
        "UPDATE item SET record = zeroblob(200);",
        // Format 6's schema labelled format 5: the migration to 6 fails.
        "DELETE FROM grdb_migrations WHERE identifier = 'v6-item-terms'; PRAGMA user_version = 5;",
    ])
    func schemaAndRangeEditsAreBadData(_ statement: String) throws {
        let home = home([("a", "SECRET-A")])
        Self.sql(home.vaultPath, statement)
        // Commands that check the whole vault refuse it.
        for args in [["verify"], ["export", "--out", home.path("x.cb")]] {
            let r = home.unlocked(args)
            #expect(r.status == 65, "\(statement) → \(args): \(r)")
            #expect(r.stderr.contains("coffer: error: "), "\(r)")
            #expect(!r.stdout.contains("SECRET-A") && !r.stderr.contains("SECRET-A"))
        }
        #expect(!FileManager.default.fileExists(atPath: home.path("x.cb")))
        // Reads refuse what they read that is damaged; an edit of rows they
        // do not read (a counter, for `get`) leaves the authentic answer.
        let get = home.unlocked(["get", "a"])
        #expect(get.status == 65 || get.status == 66 || (get.status == 0 && get.out == "SECRET-A"), "\(statement): \(get)")
        if get.status != 0 {
            #expect(get.stderr.hasPrefix("coffer: error: ") && !get.stderr.contains("SECRET-A"), "\(get)")
        }
        let ls = home.unlocked(["ls"])
        #expect(ls.status == 65 || (ls.status == 0 && ls.stdout.contains("a")), "\(statement): \(ls)")
    }
}

extension VaultTamperingTests {
    /// `sync` refuses a tampered vault before merging or writing anything
    /// (its own bundle is not written; other bundles are not blamed).
    @Test func syncRefusesATamperedVault() throws {
        let home = home([("a", "SECRET-A")])
        let dir = home.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        Self.sql(home.vaultPath, "UPDATE replica SET counter = counter + 3;")
        for args in [["sync", dir, "--dry-run"], ["sync", dir]] {
            Self.expectModified(home.unlocked(args))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }
}

@Suite("passphrase normalisation, black-box")
struct PassphraseNFCTests {
    /// A vault made with "café" typed as e + combining accent opens with
    /// the precomposed é, and the other way round.
    @Test func cafeTypedEitherWayOpens() throws {
        let home = TestHome()
        home.passphrase = "cafe\u{301} au lait"
        #expect(home.unlocked(["init"] + FastKDF.arguments).status == 0)
        home.passphrase = "caf\u{E9} au lait"
        let r = home.unlocked(["ls"])
        #expect(r.status == 0, "\(r)")
        home.passphrase = "caf\u{E9} au lai"
        #expect(home.unlocked(["ls"]).status == 77)
    }

    @Test func aPassphraseThatIsNotUTF8IsRefusedAtInit() throws {
        let home = TestHome()
        let file = home.path("pass")
        try Data([0x63, 0x61, 0x66, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: file)) // Latin-1 "café"
        chmod(file, 0o600)
        let r = home.run(["init", "--passphrase-file", file] + FastKDF.arguments)
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("not valid UTF-8"))
        #expect(!FileManager.default.fileExists(atPath: home.vaultPath))
    }
}

@Suite("rollback of the whole file, black-box")
struct VaultRollbackTests {
    /// A whole-file rollback is authentic and cannot be detected locally;
    /// once another replica's bundle says it saw more of this replica, the
    /// import says so and the file takes a new replica id (no dot is ever
    /// stamped twice); `coffer status` shows the counters.
    @Test func statusShowsWhatOtherReplicasSawAfterARestore() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--secret", "key"], stdin: "1\n").status == 0)
        let backup = home.vaultBytes()
        #expect(home.unlocked(["add", "b", "--secret", "key"], stdin: "2\n").status == 0)
        #expect(home.unlocked(["add", "c", "--secret", "key"], stdin: "3\n").status == 0)
        #expect(home.unlocked(["export", "--out", home.path("a.cb")]).status == 0)
        let b = home.path("b.coffer")
        #expect(home.unlocked(["clone", home.path("a.cb"), "--vault", b]).status == 0)
        #expect(home.unlocked(["export", "--vault", b, "--out", home.path("b.cb")]).status == 0)
        // Restore the old file in place (same inode), then hear from b.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: home.vaultPath))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: backup)
        try handle.close()
        let fresh = home.run(["status", "--json"])
        #expect(fresh.status == 0)
        SchemaValidation.expectValid(fresh.stdout, schema: "status.schema.json")
        #expect(!fresh.stderr.contains("older than what other replicas saw"))
        #expect(fresh.stdout.contains("\"counter\" : 1") || fresh.stdout.contains("\"counter\":1"), "\(fresh)")
        let imported = home.unlocked(["import", home.path("b.cb")])
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.stderr.contains("now writes as replica"), "\(imported)")
        let s = home.run(["status"])
        #expect(s.status == 0, "\(s)")
        #expect(s.stdout.contains("writes:         counter 0, highest known 0"), "\(s)")
        #expect(home.unlocked(["get", "c"]).out == "3")
        let j = home.run(["status", "--json"])
        SchemaValidation.expectValid(j.stdout, schema: "status.schema.json")
        #expect(home.unlocked(["verify"]).status == 0)
    }
}

extension VaultTamperingTests {
    /// Imports of other tools' exports (bulk rows, history, overwrite)
    /// keep the vault MAC and the item records: the vault verifies after.
    @Test func plaintextImportsKeepTheVaultVerifiable() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "GitHub", "--type", "login", "--field", "username=me"], stdin: "mine").status == 0)
        #expect(home.unlocked(["import", "--from", "bitwarden-json", InterchangeCLITests.fixture("bitwarden.json")]).status == 0)
        #expect(home.unlocked(["import", "--from", "csv", InterchangeCLITests.fixture("chrome.csv"), "--on-conflict", "overwrite"]).status == 0)
        let v = home.unlocked(["verify"])
        #expect(v.status == 0, "\(v)")
        #expect(home.unlocked(["export", "--out", home.path("all.cb")]).status == 0)
    }
}
