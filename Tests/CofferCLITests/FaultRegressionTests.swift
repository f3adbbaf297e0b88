import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Regression tests for the defects of issue 13 that need no fault
/// injection (those are in the *FaultTests suites, `make test-faults`).
@Suite("faults: regressions of issue 13, black-box")
struct FaultRegressionTests {
    // MARK: helpers

    /// Sets a file's modification time `seconds` into the past (a
    /// temporary left by a process killed that long ago).
    static func age(_ path: String, by seconds: Int) {
        var times = [timespec(tv_sec: time(nil) - seconds, tv_nsec: 0), timespec(tv_sec: time(nil) - seconds, tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    static func touch(_ path: String, _ text: String = "litter") {
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
    }

    /// Runs coffer as an unprivileged user (nobody) when the tests run as
    /// root, since root ignores file modes; as the caller otherwise. The
    /// sandbox is handed to that user first.
    static func asUnprivileged(_ home: TestHome, _ args: [String], stdin: String? = nil) -> TimedResult {
        let pw = home.path("passphrase.txt")
        FileManager.default.createFile(atPath: pw, contents: Data((home.passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let argv = args + ["--passphrase-file", pw]
        if geteuid() == 0 {
            chownTree(home.root.path, to: 65534)
            return Spawn.timed(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", CofferBinary.path] + argv,
                environment: home.environment, workDir: "/", stdin: stdin, timeout: 60)
        }
        return Spawn.timed(CofferBinary.path, argv, environment: home.environment, workDir: home.root.path, stdin: stdin, timeout: 60)
    }

    static func chownTree(_ root: String, to uid: uid_t) {
        _ = chown(root, uid, uid)
        guard let e = FileManager.default.enumerator(atPath: root) else { return }
        while let rel = e.nextObject() as? String { _ = lchown(root + "/" + rel, uid, uid) }
    }

    // MARK: 1. init

    @Test func aFailedInitLeavesNothingAndItsLitterIsSwept() throws {
        let home = TestHome()
        let dir = (home.vaultPath as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // What a killed init leaves: its temporary vault and journal.
        let old = dir + "/.vault.coffer.init-0123456789ab"
        Self.touch(old)
        Self.touch(old + "-journal")
        Self.age(old, by: 600)
        Self.age(old + "-journal", by: 600)
        // A young one may be another init at work: kept.
        let young = dir + "/.vault.coffer.init-ba9876543210"
        Self.touch(young)
        // Not ours: kept whatever its age.
        let other = dir + "/.vault.coffer.init-notours"
        Self.touch(other)
        Self.age(other, by: 600)
        home.initVault()
        #expect(home.names(in: dir) == [".vault.coffer.init-ba9876543210", ".vault.coffer.init-notours", "vault.coffer"])
        #expect(home.unlocked(["ls"]).status == 0)
    }

    @Test func initNeverReplacesAndPublishesOnlyAWholeVault() {
        let home = TestHome()
        home.initVault()
        let before = home.vaultBytes()
        let again = home.unlocked(["init"] + FastKDF.arguments)
        #expect(again.status == 73, "\(again)")
        #expect(home.vaultBytes() == before)
        // No temporary file of the refused init stays.
        let dir = (home.vaultPath as NSString).deletingLastPathComponent
        #expect(home.names(in: dir) == ["vault.coffer"])
    }

    @Test func aVaultWithoutItsHeaderIsDamagedAndNamedByPath() throws {
        let home = TestHome()
        home.initVault()
        let sql = Spawn.timed("/usr/bin/sqlite3", [home.vaultPath, "DELETE FROM vault"], environment: home.environment, workDir: home.root.path)
        try #require(sql.status == 0, "\(sql)")
        for args in [["status"], ["ls"]] {
            let r = home.unlocked(args)
            #expect(r.status == 65, "\(r)")
            #expect(r.stderr.contains(home.vaultPath), "\(r)")
            #expect(!r.stderr.contains("coffer.vault:"), "\(r)")
            #expect(r.stderr.contains("header is missing"), "\(r)")
        }
        let drop = Spawn.timed("/usr/bin/sqlite3", [home.vaultPath, "DROP TABLE vault"], environment: home.environment, workDir: home.root.path)
        try #require(drop.status == 0, "\(drop)")
        let r = home.unlocked(["ls"])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains(home.vaultPath) && r.stderr.contains("damaged"), "\(r)")
    }

    // MARK: 2. sessions

    @Test func aFIFONamedLikeASessionHangsNothing() throws {
        let home = TestHome()
        home.initVault()
        let started = home.unlocked(["unlock"])
        #expect(started.status == 0, "\(started)")
        let folder = home.path("run/coffer")
        let fifo = folder + "/0123456789abcdef0123456789abcdef.session"
        #expect(mkfifo(fifo, 0o600) == 0)
        let token = "cs1.0123456789abcdef0123456789abcdef." + String(repeating: "A", count: 43)
        let runs: [(String, [String], Bool, [String: String])] = [
            ("status", ["status"], false, [:]),
            ("status with the FIFO's token", ["status"], false, ["COFFER_SESSION": token]),
            ("get with the FIFO's token", ["get", "x"], false, ["COFFER_SESSION": token]),
            ("lock", ["lock"], false, ["COFFER_SESSION": token]),
            ("lock --all", ["lock", "--all"], false, [:]),
            ("unlock", ["unlock"], true, [:]),
        ]
        for (what, args, unlocked, env) in runs {
            let r = home.timed(args, unlocked: unlocked, env: env, timeout: 60)
            #expect(!r.timedOut, "\(what) hung: \(r)")
            #expect(r.status < 128, "\(what): \(r)")
            if args != ["get", "x"] {
                #expect(r.stderr.contains("skipped \(fifo): not a regular file"), "\(what): \(r)")
            }
        }
        // Never removed, never opened: still a FIFO.
        #expect(home.fileType(fifo) == S_IFIFO)
        // The FIFO's token is refused as a session, exit 77.
        let get = home.timed(["get", "x"], env: ["COFFER_SESSION": token], timeout: 60)
        #expect(get.status == 77, "\(get)")
    }

    // MARK: 3. full disk (without a tmpfs: /dev/full)

    @Test func aFullDeviceIsExit74NamingIt() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        for args in [["export", "--out", "/dev/full"], ["summary", "--out", "/dev/full"]] {
            let r = home.timed(args, unlocked: true)
            #expect(r.status == 74, "\(r)")
            #expect(r.stderr.contains("no space left on"), "\(r)")
            #expect(r.stderr.contains("/dev/full") || r.stderr.contains("/dev"), "\(r)")
            #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(r)")
        }
    }

    // MARK: 4. temporary files

    @Test func syncSweepsStaleBundleTemporariesOnly() throws {
        let home = TestHome()
        home.initVault()
        let dir = home.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let stale = dir + "/.0123456789abcdef0123456789abcdef.coffer-bundle.tmp-00112233aabb"
        let young = dir + "/.0123456789abcdef0123456789abcdef.coffer-bundle.tmp-445566778899"
        let lockedStale = dir + "/.fedcba9876543210fedcba9876543210.coffer-bundle.tmp-ccddeeff0011"
        let notOurs = dir + "/.notes.txt.tmp-00112233aabb"
        for p in [stale, young, lockedStale, notOurs] { Self.touch(p) }
        for p in [stale, lockedStale, notOurs] { Self.age(p, by: 600) }
        // A live writer holds its lock.
        let fd = open(lockedStale, O_RDONLY)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let r = home.unlocked(["sync", dir])
        #expect(r.status == 0, "\(r)")
        let names = home.names(in: dir)
        #expect(!names.contains((stale as NSString).lastPathComponent), "\(names)")
        for p in [young, lockedStale, notOurs] { #expect(names.contains((p as NSString).lastPathComponent), "\(names)") }
    }

    /// Issue 24 item 11: a `sync` with nothing new (answered from the
    /// headers, without the passphrase) used to leave a killed writer's
    /// temporary in the folder, and Syncthing copied it to every machine.
    /// It sweeps now, with the same rule: old and unlocked only.
    @Test func aNoOpSyncSweepsStaleBundleTemporaries() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--secret", "key"], stdin: "1\n").status == 0)
        let dir = home.path("sync")
        #expect(home.unlocked(["sync", dir]).status == 0)
        let stale = dir + "/.0123456789abcdef0123456789abcdef.coffer-bundle.tmp-00112233aabb"
        let young = dir + "/.0123456789abcdef0123456789abcdef.coffer-bundle.tmp-445566778899"
        let lockedStale = dir + "/.fedcba9876543210fedcba9876543210.coffer-bundle.tmp-ccddeeff0011"
        let notOurs = dir + "/.notes.txt.tmp-00112233aabb"
        for p in [stale, young, lockedStale, notOurs] { Self.touch(p) }
        for p in [stale, lockedStale, notOurs] { Self.age(p, by: 600) }
        let fd = open(lockedStale, O_RDONLY)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let vaultBefore = home.vaultBytes()
        // No passphrase source at all: the no-op is seen from the headers.
        let r = home.run(["sync", dir])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("nothing new"), "\(r)")
        #expect(home.vaultBytes() == vaultBefore)
        let names = home.names(in: dir)
        #expect(!names.contains((stale as NSString).lastPathComponent), "\(names)")
        for p in [young, lockedStale, notOurs] { #expect(names.contains((p as NSString).lastPathComponent), "\(names)") }
    }

    @Test func exportAndCloneSweepTheirStaleTemporaries() throws {
        let home = TestHome()
        home.initVault()
        let exportLitter = home.path(".out.cb.tmp-0a0b0c0d0e0f")
        let cloneLitter = home.path(".b.coffer.clone-0a0b0c0d0e0f")
        for p in [exportLitter, cloneLitter, cloneLitter + "-journal"] {
            Self.touch(p)
            Self.age(p, by: 600)
        }
        #expect(home.unlocked(["export", "--out", "out.cb"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: exportLitter))
        #expect(home.unlocked(["clone", "out.cb", "--vault", "b.coffer"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: cloneLitter))
        #expect(!FileManager.default.fileExists(atPath: cloneLitter + "-journal"))
        #expect(home.names(in: home.root.path).filter { $0.hasPrefix(".") }.isEmpty, "\(home.names(in: home.root.path))")
    }

    // MARK: 5. honest codes

    @Test func anUnreadableVaultIsPermissionDenied() throws {
        let home = TestHome()
        home.initVault()
        let before = home.vaultBytes()
        if geteuid() == 0 { Self.chownTree(home.root.path, to: 65534) }
        chmod(home.vaultPath, 0o000)
        let r = Self.asUnprivileged(home, ["ls"])
        chmod(home.vaultPath, 0o600)
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.contains("permission denied"), "\(r)")
        #expect(r.stderr.contains(home.vaultPath), "\(r)")
        #expect(!r.stderr.contains("no vault at"), "\(r)")
        #expect(home.vaultBytes() == before)
        // A folder on the way that cannot be searched: the same, not "no vault".
        let dir = (home.vaultPath as NSString).deletingLastPathComponent
        chmod(dir, 0o000)
        let d = Self.asUnprivileged(home, ["ls"])
        chmod(dir, 0o700)
        #expect(d.status == 77, "\(d)")
        #expect(!d.stderr.contains("no vault at"), "\(d)")
    }

    @Test func aReadOnlyVaultOrFolderIsSaidSoAndUnchanged() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "api-key", "--secret", "key"], stdin: "one\n").status == 0)
        let before = home.vaultBytes()
        if geteuid() == 0 { Self.chownTree(home.root.path, to: 65534) }
        chmod(home.vaultPath, 0o400)
        let r = Self.asUnprivileged(home, ["add", "b", "--type", "api-key", "--secret", "key"], stdin: "two\n")
        chmod(home.vaultPath, 0o600)
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.contains("read-only"), "\(r)")
        #expect(!r.stderr.contains("cannot create"), "\(r)")
        #expect(home.vaultBytes() == before)
        // Reading still works.
        chmod(home.vaultPath, 0o400)
        let ls = Self.asUnprivileged(home, ["ls"])
        chmod(home.vaultPath, 0o600)
        #expect(ls.status == 0, "\(ls)")

        let dir = (home.vaultPath as NSString).deletingLastPathComponent
        chmod(dir, 0o500)
        let f = Self.asUnprivileged(home, ["add", "b", "--type", "api-key", "--secret", "key"], stdin: "two\n")
        chmod(dir, 0o700)
        #expect(f.status == 77, "\(f)")
        #expect(f.stderr.contains("read-only") && f.stderr.contains(dir), "\(f)")
        #expect(home.vaultBytes() == before)
    }
}
