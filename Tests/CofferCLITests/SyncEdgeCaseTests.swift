import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 14's reproductions, run literally: a vault restored in place, the
/// local-only → sync round trip, and the numbering of conflict sides.
@Suite("sync edge cases (issue 14), black-box")
struct SyncEdgeCaseTests {
    typealias F = SyncFixture

    /// The value of one field, or nil.
    static func field(_ h: TestHome, _ item: String, _ field: String) -> String? {
        let r = h.unlocked(["get", item, "--field", field])
        return r.status == 0 ? r.out : nil
    }

    /// The replicated state of both items (without `updatedAt`, which is
    /// local bookkeeping: docs/sync.md, "Limits").
    static func state(_ h: TestHome) -> String {
        F.dump(h).split(separator: "\n").filter { !$0.contains("\"updatedAt\"") }.joined(separator: "\n")
    }

    static func cp(_ from: String, _ to: String) {
        let r = Spawn.run("/bin/cp", [from, to], stdin: nil, fd3: nil, environment: ["PATH": "/usr/bin:/bin"], workDir: "/")
        #expect(r.status == 0, "\(r)")
    }

    static func inode(_ path: String) -> UInt64 {
        var st = stat()
        stat(path, &st)
        return UInt64(st.st_ino)
    }

    /// Bug 1: `cp backup vault.coffer` (same inode), then an edit: the
    /// edit must not reuse the dot the lost write had, so after syncing
    /// both replicas hold both writes.
    @Test func aVaultRestoredInPlaceKeepsEveryWrite() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let backup = a.path("backup.coffer")
        Self.cp(a.vaultPath, backup)
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=before-restore"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(b.unlocked(["sync", dir]))
        let ino = Self.inode(a.vaultPath)
        Self.cp(backup, a.vaultPath)
        #expect(Self.inode(a.vaultPath) == ino)
        let edit = a.unlocked(["edit", "db", "--field", "url=after-restore"])
        F.expectOK(edit)
        #expect(edit.stderr.contains("restored from an older copy"), "\(edit)")
        for _ in 0..<2 {
            F.expectOK(a.unlocked(["sync", dir]))
            F.expectOK(b.unlocked(["sync", dir]))
        }
        for h in [a, b] {
            #expect(Self.field(h, "db", "username") == "before-restore")
            #expect(Self.field(h, "db", "url") == "after-restore")
        }
        #expect(Self.state(a) == Self.state(b))
    }

    /// Bug 1 without the write mark (the whole folder restored, or the
    /// file copied back by another tool): the dot is reused locally, and
    /// sync notices from the folder before writing, moves the write to a
    /// new replica id and merges the lost one.
    @Test func aRestoredVaultIsNoticedBySyncBeforeItWrites() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        let backup = a.path("backup.coffer")
        Self.cp(a.vaultPath, backup)
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=before-restore"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(b.unlocked(["sync", dir]))
        Self.cp(backup, a.vaultPath)
        let mark = (a.vaultPath as NSString).deletingLastPathComponent + "/.vault.coffer.written"
        #expect(FileManager.default.fileExists(atPath: mark))
        unlink(mark)
        F.expectOK(a.unlocked(["edit", "db", "--field", "url=after-restore"]))
        let sync = a.unlocked(["sync", dir])
        F.expectOK(sync)
        #expect(sync.stderr.contains("restored from a backup") && sync.stderr.contains("1 write since its last export"), "\(sync)")
        for _ in 0..<2 {
            F.expectOK(b.unlocked(["sync", dir]))
            F.expectOK(a.unlocked(["sync", dir]))
        }
        for h in [a, b] {
            #expect(Self.field(h, "db", "username") == "before-restore")
            #expect(Self.field(h, "db", "url") == "after-restore")
            #expect(h.unlocked(["conflicts", "--json"]).stdout.contains("\"conflicts\" : [\n\n  ]"))
        }
        #expect(Self.state(a) == Self.state(b))
        // Syncing again changes nothing.
        let before = F.fingerprint(dir)
        let again = a.unlocked(["sync", dir])
        F.expectOK(again)
        #expect(F.fingerprint(dir) == before)
    }

    /// A write made before the backup was taken but exported only after
    /// it exists in both files under one dot with one ciphertext: it keeps
    /// its dot (no duplicate, no conflict of two equal values), and only
    /// the write made after the restore moves.
    @Test func aWriteExportedAfterTheBackupIsNotDuplicated() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(a.unlocked(["edit", "db", "--field", "url=genuine"]))
        let backup = a.path("backup.coffer")
        Self.cp(a.vaultPath, backup)
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=lost"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(b.unlocked(["sync", dir]))
        Self.cp(backup, a.vaultPath)
        unlink((a.vaultPath as NSString).deletingLastPathComponent + "/.vault.coffer.written")
        F.expectOK(a.unlocked(["edit", "db", "--field", "note=after"]))
        let sync = a.unlocked(["sync", dir])
        F.expectOK(sync)
        #expect(sync.stderr.contains("its 1 write since its last export"), "\(sync)")
        for _ in 0..<2 {
            F.expectOK(b.unlocked(["sync", dir]))
            F.expectOK(a.unlocked(["sync", dir]))
        }
        for h in [a, b] {
            #expect(Self.field(h, "db", "url") == "genuine")
            #expect(Self.field(h, "db", "username") == "lost")
            #expect(Self.field(h, "db", "note") == "after")
            #expect(h.unlocked(["conflicts", "--json"]).stdout.contains("\"conflicts\" : [\n\n  ]"))
        }
        #expect(Self.state(a) == Self.state(b))
    }

    /// Bug 2: a conflict that arises while the item is local-only keeps
    /// both sides when it syncs again, on both replicas.
    @Test func aConflictMadeWhileLocalOnlySurvivesTheSwitchBack() throws {
        let (a, c) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(c.unlocked(["edit", "db", "--policy", "local-only"]))
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=A1"]))
        F.expectOK(c.unlocked(["edit", "db", "--field", "username=C1"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(c.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        #expect(c.unlocked(["conflicts"]).stdout.contains("username"))
        F.expectOK(c.unlocked(["edit", "db", "--policy", "sync"]))
        for _ in 0..<2 {
            F.expectOK(c.unlocked(["sync", dir]))
            F.expectOK(a.unlocked(["sync", dir]))
        }
        for h in [a, c] {
            let list = h.unlocked(["conflicts", "--json"])
            #expect(list.stdout.contains("\"A1\"") && list.stdout.contains("\"C1\""), "\(list)")
        }
        #expect(a.unlocked(["conflicts", "--json"]).stdout == c.unlocked(["conflicts", "--json"]).stdout)
        #expect(Self.field(a, "db", "username") == Self.field(c, "db", "username"))
    }

    /// Bug 3: switching back to sync does not re-stamp old values: an edit
    /// made meanwhile elsewhere wins, with no conflict, as if the item had
    /// synced all along.
    @Test func switchingBackToSyncDoesNotResurrectOldValues() throws {
        let (a, c) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(c.unlocked(["edit", "db", "--policy", "local-only"]))
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=A2"]))
        F.expectOK(a.unlocked(["sync", dir]))
        // C edits another field while local-only; it must arrive too.
        F.expectOK(c.unlocked(["edit", "db", "--field", "url=https://c.example"]))
        F.expectOK(c.unlocked(["edit", "db", "--policy", "sync"]))
        for _ in 0..<2 {
            F.expectOK(c.unlocked(["sync", dir]))
            F.expectOK(a.unlocked(["sync", dir]))
        }
        for h in [a, c] {
            #expect(Self.field(h, "db", "username") == "A2")
            #expect(Self.field(h, "db", "url") == "https://c.example")
            #expect(h.unlocked(["conflicts", "--json"]).stdout.contains("\"conflicts\" : [\n\n  ]"))
        }
        #expect(Self.state(a) == Self.state(c))
    }

    /// A write made before the item went local-only, never exported, is
    /// not lost either (it moves to the item's private writer).
    @Test func anUnexportedWriteBeforeGoingLocalOnlyArrivesLater() throws {
        let (a, c) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(c.unlocked(["edit", "db", "--field", "username=C-early"]))
        F.expectOK(c.unlocked(["edit", "db", "--policy", "local-only"]))
        F.expectOK(c.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        #expect(Self.field(a, "db", "username") == "u0")
        F.expectOK(c.unlocked(["edit", "db", "--policy", "sync"]))
        F.expectOK(c.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        #expect(Self.field(a, "db", "username") == "C-early")
    }

    /// Bug 4: the sides of a delete conflict are numbered the same way on
    /// every run and every replica, so `resolve --keep N` means one side.
    @Test func deleteConflictSidesHaveOneOrder() throws {
        let (a, b) = F.twoReplicas(dir: "")
        let dir = a.path("sync")
        F.expectOK(a.unlocked(["rm", "db"]))
        // One write that changes several fields: equal times and dots.
        F.expectOK(b.unlocked(["edit", "db", "--field", "username=x", "--field", "url=y", "--field", "note=z", "--tag", "t"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(b.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        var outputs = Set<String>()
        for _ in 0..<6 {
            for h in [a, b] {
                let r = h.unlocked(["conflicts", "--json"])
                F.expectOK(r)
                outputs.insert(r.stdout)
            }
        }
        #expect(outputs.count == 1, "\(outputs.joined(separator: "\n----\n"))")
        #expect(outputs.first?.contains("\"delete\"") == true)
        // The same --keep on both replicas settles it the same way.
        F.expectOK(a.unlocked(["resolve", "db", "--field", "@deleted", "--keep", "3"]))
        F.expectOK(b.unlocked(["resolve", "db", "--field", "@deleted", "--keep", "3"]))
        F.expectOK(a.unlocked(["sync", dir]))
        F.expectOK(b.unlocked(["sync", dir]))
        F.expectOK(a.unlocked(["sync", dir]))
        #expect(Self.state(a) == Self.state(b))
    }
}
