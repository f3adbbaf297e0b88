import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// 8 concurrent writers × 50 writes each: nothing is lost (issue 13).
@Suite("faults: concurrent writers", .enabled(if: FaultSettings.enabled))
struct ConcurrencyFaultTests {
    static let writers = Int(FaultSettings.environment["COFFER_FAULTS_WRITERS"] ?? "") ?? 8
    static let writesEach = Int(FaultSettings.environment["COFFER_FAULTS_WRITES"] ?? "") ?? 50

    @Test func concurrentWritersLoseNothing() throws {
        let home = TestHome()
        home.initVault()
        // One session for all writers: no KDF per write.
        let unlock = home.unlocked(["unlock", "--shell", "json"])
        try #require(unlock.status == 0, "\(unlock)")
        let json = try JSONSerialization.jsonObject(with: Data(unlock.stdout.utf8)) as? [String: Any]
        let token = try #require(json?["token"] as? String)
        let results = Results()
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: Self.writers) { w in
            for i in 0..<Self.writesEach {
                let name = "w\(w)/item\(i)"
                var attempts = 0
                while true {
                    attempts += 1
                    let r = home.timed(
                        ["add", name, "--type", "api-key", "--secret", "key"], stdin: "sk-\(w)-\(i)\n", env: ["COFFER_SESSION": token], timeout: 60)
                    // Busy (75) is an honest answer a script retries.
                    if r.status == 75 && attempts < 20 {
                        results.busy()
                        continue
                    }
                    results.record(name: name, status: r.status, detail: r.status == 0 ? "" : r.description)
                    break
                }
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        let failures = results.failures()
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        let ls = home.timed(["ls"], env: ["COFFER_SESSION": token])
        let names = Set(ls.text.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") })
        let expected = Set((0..<Self.writers).flatMap { w in (0..<Self.writesEach).map { "w\(w)/item\($0)" } })
        #expect(names == expected, "missing: \(expected.subtracting(names).sorted().prefix(10))")
        // Every value is the one written.
        for w in [0, Self.writers - 1] {
            let get = home.timed(["get", "w\(w)/item\(Self.writesEach - 1)"], env: ["COFFER_SESSION": token])
            #expect(get.text == "sk-\(w)-\(Self.writesEach - 1)\n")
        }
        let integrity = Spawn.timed("/usr/bin/sqlite3", [home.vaultPath, "PRAGMA integrity_check"], environment: home.environment, workDir: home.root.path)
        #expect(integrity.text == "ok\n")
        print(
            "faults: \(Self.writers) writers × \(Self.writesEach) writes in \(String(format: "%.1f", elapsed)) s, \(results.busyCount) busy retries, \(names.count) items"
        )
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var bad: [String] = []
        private(set) var busyCount = 0
        func busy() { lock.withLock { busyCount += 1 } }
        func record(name: String, status: Int32, detail: String) {
            if status != 0 { lock.withLock { bad.append("\(name): \(detail)") } }
        }
        func failures() -> [String] { lock.withLock { bad } }
    }
}

/// A tmpfs mounted for the test (root only), unmounted at the end.
final class SmallDisk {
    let path: String
    private(set) var mounted = false

    init?(_ path: String, size: String) {
        self.path = path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let r = Spawn.timed("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path], environment: [:], workDir: "/")
        guard r.status == 0 else { return nil }
        mounted = true
    }

    /// Fills the disk: a file grows until the disk refuses (ENOSPC).
    func fill() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        let chunk = [UInt8](repeating: 0x55, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        // The last partial blocks too.
        let byte: [UInt8] = [0]
        while byte.withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) > 0 {}
        close(fd)
    }

    func free() { unlink(path + "/filler") }

    func remount(readOnly: Bool) -> Bool {
        Spawn.timed("/bin/mount", ["-o", readOnly ? "remount,ro" : "remount,rw", path], environment: [:], workDir: "/").status == 0
    }

    deinit {
        if mounted { _ = Spawn.timed("/bin/umount", ["-l", path], environment: [:], workDir: "/") }
    }
}

/// A full disk is exit 74 naming the disk, a read-only one exit 77, and
/// the vault stays as it was (issue 13). Needs root to mount a tmpfs.
@Suite("faults: full and read-only disks", .serialized, .enabled(if: FaultSettings.enabled && FaultSettings.isRoot))
struct DiskFaultTests {
    static func oneErrorLine(_ r: TimedResult) -> Bool {
        r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1
    }

    @Test func aFullVaultDiskIsExit74AndTheVaultIsUnchanged() throws {
        let home = TestHome()
        let disk = try #require(SmallDisk(home.path("disk"), size: "2m"))
        let vault = disk.path + "/v.coffer"
        let v = ["--vault", vault]
        #expect(home.unlocked(["init"] + v + FastKDF.arguments).status == 0)
        #expect(home.unlocked(["add", "a", "--type", "api-key", "--secret", "key"] + v, stdin: "sk-1\n").status == 0)
        #expect(home.unlocked(["export", "--out", "full.cb"] + v).status == 0)
        let before = home.vaultBytes(vault)
        disk.fill()
        // Big enough not to fit in the pages the vault already has.
        let big = String(repeating: "x", count: 60_000)
        let writes: [([String], String?)] = [
            (["add", "b", "--type", "api-key", "--secret", "key"] + v, "\(big)\n"),
            (["passwd", "--new-passphrase-file", "np.txt", "--kdf-memory", "8M"] + v, nil),
            (["import", "full.cb"] + v, nil),
        ]
        FileManager.default.createFile(atPath: home.path("np.txt"), contents: Data("another passphrase\n".utf8))
        for (args, stdin) in writes {
            let r = home.timed(args, unlocked: true, stdin: stdin)
            if args[0] == "import" && r.status == 0 { continue } // nothing new to write: fits
            #expect(r.status == 74, "\(args[0]): \(r)")
            #expect(r.stderr.contains("no space left on the disk mounted at \(disk.path)"), "\(args[0]): \(r)")
            #expect(Self.oneErrorLine(r), "\(r)")
            #expect(home.vaultBytes(vault) == before, "\(args[0]) changed the vault")
        }
        // A clone onto the full disk: 74, and nothing left there.
        let cl = home.timed(["clone", "full.cb", "--vault", disk.path + "/c.coffer"], unlocked: true)
        #expect(cl.status == 74, "\(cl)")
        // (`.v.coffer.written` is the vault's own write record, docs/sync.md,
        // "Copied and restored vault files": there since the first add.)
        #expect(home.names(in: disk.path) == [".v.coffer.written", "filler", "v.coffer"])
        // Space again: the same writes work, the vault opens.
        disk.free()
        let add = home.timed(["add", "b", "--type", "api-key", "--secret", "key"] + v, unlocked: true, stdin: "\(big)\n")
        #expect(add.status == 0, "\(add)")
        let integrity = Spawn.timed("/usr/bin/sqlite3", [vault, "PRAGMA integrity_check"], environment: home.environment, workDir: home.root.path)
        #expect(integrity.text == "ok\n")
    }

    @Test func aFullSyncFolderIsExit74AndHoldsNoTornBundle() throws {
        let home = TestHome()
        home.initVault()
        let big = String(repeating: "y", count: 20_000)
        for i in 0..<20 {
            #expect(home.unlocked(["add", "n\(i)", "--type", "api-key", "--secret", "key"], stdin: "\(big)\(i)\n").status == 0)
        }
        let disk = try #require(SmallDisk(home.path("sync"), size: "1m"))
        disk.fill()
        disk.free()
        // Leave less room than the bundle needs (about 400 kB).
        let fd = open(disk.path + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = ftruncate(fd, 0)
        let chunk = [UInt8](repeating: 1, count: 700 * 1024)
        _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        for args in [["sync", disk.path], ["export", "--out", disk.path + "/out.cb"]] {
            let r = home.timed(args, unlocked: true)
            #expect(r.status == 74, "\(args[0]): \(r)")
            #expect(r.stderr.contains("no space left on the disk mounted at \(disk.path)"), "\(r)")
            #expect(!r.stderr.contains("io(\""), "\(r)")
            #expect(Self.oneErrorLine(r), "\(r)")
            // Nothing under a final name, no temporary left.
            #expect(home.names(in: disk.path) == ["filler"], "\(home.names(in: disk.path))")
        }
        #expect(home.unlocked(["ls"]).status == 0)
    }

    @Test func aReadOnlyDiskIsSaidSo() throws {
        let home = TestHome()
        let disk = try #require(SmallDisk(home.path("ro"), size: "2m"))
        let vault = disk.path + "/v.coffer"
        let v = ["--vault", vault]
        #expect(home.unlocked(["init"] + v + FastKDF.arguments).status == 0)
        #expect(home.unlocked(["add", "a", "--type", "api-key", "--secret", "key"] + v, stdin: "sk-1\n").status == 0)
        let before = home.vaultBytes(vault)
        try #require(disk.remount(readOnly: true))
        defer { _ = disk.remount(readOnly: false) }
        let add = home.timed(["add", "b", "--type", "api-key", "--secret", "key"] + v, unlocked: true, stdin: "sk-2\n")
        #expect(add.status == 77, "\(add)")
        #expect(add.stderr.contains("read-only file system"), "\(add)")
        #expect(Self.oneErrorLine(add), "\(add)")
        // Reading works.
        let get = home.timed(["get", "a"] + v, unlocked: true)
        #expect(get.status == 0 && get.text == "sk-1\n", "\(get)")
        #expect(home.vaultBytes(vault) == before)
        // Writing a bundle there: one line, no crash.
        let ex = home.timed(["export", "--out", disk.path + "/x.cb"] + v, unlocked: true)
        #expect(ex.status == 73 || ex.status == 77, "\(ex)")
        #expect(Self.oneErrorLine(ex), "\(ex)")
    }
}
