import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The session's integrity stamp (docs/key-hierarchy.md, "Integrity
/// stamp"), black-box: once a `sync` has checked the vault MAC, the next
/// ones trust what coffer wrote since, but an edit of the file's bytes by
/// any other program — a hex editor that keeps SQLite's change counter and
/// sets the modification time back, with or without a stamp forged for the
/// edited file — is still refused, and the stamp ends with its session.
@Suite("integrity stamp, black-box")
struct IntegrityStampCLITests {
    static func sqlite(_ path: String, _ query: String) -> String {
        let r = Spawn.run("/usr/bin/sqlite3", ["-readonly", path, query], stdin: nil, fd3: nil, environment: [:], workDir: "/")
        precondition(r.status == 0, "sqlite3 failed: \(r)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex), let b = UInt8(hex[i..<j], radix: 16) {
            out.append(b)
            i = j
        }
        return out
    }

    /// A vault with items, a session, a sync folder synced once; the
    /// session token and the path of the session's stamp.
    static func synced() throws -> (TestHome, [String: String], String, String) {
        let home = TestHome()
        home.initVault()
        for i in 0..<8 {
            let r = home.unlocked(["add", "api/k\(i)", "--type", "api-key"], stdin: "value-number-\(i)\n")
            #expect(r.status == 0, "\(r)")
        }
        let token = try SessionTests.unlock(home)
        let env = ["COFFER_SESSION": token]
        let dir = home.path("sync")
        let first = home.run(["sync", dir], env: env)
        #expect(first.status == 0, "\(first)")
        let id = token.split(separator: ".")[1]
        return (home, env, dir, home.environment["XDG_RUNTIME_DIR"]! + "/coffer/\(id).verified")
    }

    /// Flips one byte of a version's sealed payload (in its Poly1305 tag,
    /// which the vault MAC covers) in the file, in place,
    /// the way a hex editor does: SQLite's change counter is not touched,
    /// and the modification time is set back afterwards (`touch -r`).
    static func hexEdit(_ vault: String) throws {
        // Timestamps of kernels before 6.13 move once per clock tick: an
        // edit in the same tick as coffer's last write would keep the
        // change time (docs/key-hierarchy.md says what that needs).
        usleep(20_000)
        let payload = bytes(hex: sqlite(vault, "SELECT hex(substr(payload, -24)) FROM fieldVersion ORDER BY counter DESC LIMIT 1"))
        #expect(payload.count == 24)
        var st = stat()
        #expect(stat(vault, &st) == 0)
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: vault)))
        let at = try #require(file.indices.first { i in i + 24 <= file.count && file[i] == payload[0] && Array(file[i..<i + 24]) == payload })
        let fd = open(vault, O_WRONLY)
        #expect(fd >= 0)
        var flipped = file[at + 23] ^ 0x40
        #expect(pwrite(fd, &flipped, 1, off_t(at + 23)) == 1)
        close(fd)
        var times = [st.st_atim, st.st_mtim]
        #expect(utimensat(AT_FDCWD, vault, &times, 0) == 0)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: vault))[24..<28]) == Array(file[24..<28]), "the change counter moved")
    }

    @Test("a sync trusts what coffer wrote since the last check; a hex edit that keeps the change counter and mtime is still refused")
    func hexEditIsRefused() throws {
        let (home, env, dir, stamp) = try Self.synced()
        var st = stat()
        #expect(stat(stamp, &st) == 0 && st.st_mode & 0o777 == 0o600, "no private stamp after a sync")
        // Coffer's own writes keep the vault trusted and serve as usual.
        #expect(home.run(["edit", "api/k1", "--field", "note=x"], env: env).status == 0)
        Self.otherReplicaWrites(home, dir)
        let merged = home.run(["sync", dir], env: env)
        #expect(merged.status == 0 && merged.stderr.contains("merged"), "\(merged)")
        try Self.hexEdit(home.vaultPath)
        // Another machine's change arrives: the sync must merge, so it
        // checks the vault first (a sync with nothing to do reads nothing).
        Self.otherReplicaWrites(home, dir)
        let before = home.vaultBytes()
        let r = home.run(["sync", dir], env: env)
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("vault MAC does not match") || r.stderr.contains("modified outside coffer"), "\(r)")
        #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error:") }.count == 1, "\(r)")
        #expect(home.vaultBytes() == before, "the refused sync changed the vault")
        #expect(!r.stderr.contains("wrote "), "a segment left the edited vault: \(r)")
    }

    /// A second replica, cloned from the folder, edits and publishes.
    static func otherReplicaWrites(_ home: TestHome, _ dir: String) {
        let other = home.path("other.coffer")
        if access(other, F_OK) != 0 {
            let c = home.unlocked(["clone", "--vault", other, dir])
            #expect(c.status == 0, "\(c)")
        }
        let e = home.unlocked(["edit", "--vault", other, "api/k3", "--field", "note=\(UUID().uuidString)"])
        #expect(e.status == 0, "\(e)")
        let s = home.unlocked(["sync", "--vault", other, dir])
        #expect(s.status == 0, "\(s)")
    }

    @Test("a stamp forged for the edited file is not trusted")
    func forgedStampIsRefused() throws {
        let (home, env, dir, stamp) = try Self.synced()
        try Self.hexEdit(home.vaultPath)
        // Everything a stamp holds, for the file as it now is; the tag
        // cannot be made without the vault's key.
        var st = stat()
        #expect(stat(home.vaultPath, &st) == 0)
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: home.vaultPath)))
        var forged = Array("CFVRFY01".utf8)
        forged += Self.bytes(hex: Self.sqlite(home.vaultPath, "SELECT hex(vaultId) FROM vault"))
        for v in [UInt64(st.st_dev), UInt64(st.st_ino), UInt64(st.st_size), UInt64(st.st_ctim.tv_sec), UInt64(st.st_ctim.tv_nsec)] {
            forged += withUnsafeBytes(of: v.bigEndian) { Array($0) }
        }
        forged += Array(file[24..<28])
        forged += Self.bytes(hex: Self.sqlite(home.vaultPath, "SELECT hex(mac) FROM vaultIntegrity"))
        forged += [UInt8](repeating: 0x5A, count: 32)
        #expect(forged.count == 8 + 16 + 40 + 4 + 32 + 32)
        unlink(stamp)
        let fd = open(stamp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        #expect(write(fd, forged, forged.count) == forged.count)
        close(fd)
        Self.otherReplicaWrites(home, dir)
        let r = home.run(["sync", dir], env: env)
        #expect(r.status == 65, "\(r)")
    }

    @Test("the stamp ends with its session")
    func stampEndsWithSession() throws {
        let (home, env, _, stamp) = try Self.synced()
        #expect(access(stamp, F_OK) == 0)
        #expect(home.run(["lock"], env: env).status == 0)
        #expect(access(stamp, F_OK) != 0, "the stamp outlived its session")
    }
}
