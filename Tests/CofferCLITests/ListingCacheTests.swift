import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The session's listing cache (docs/key-hierarchy.md, "Listing cache"),
/// black-box: `ls` and `find` with a session print exactly what a full
/// listing prints; a cache that is stale, damaged, forged, from another
/// vault, not private, or a link is never served (it is replaced), an edit
/// made with `sqlite3` is still refused, and the cache ends with its session.
@Suite("listing cache")
struct ListingCacheTests {
    /// A vault with items that exercise every column of the table, and a
    /// session on it.
    static func home() throws -> (TestHome, String) {
        let home = TestHome()
        home.initVault()
        let adds: [([String], String)] = [
            (["add", "work/openai", "--type", "api-key", "--tag", "ai", "--tag", "prod", "--source", "https://platform.openai.com"], "sk-1\n"),
            (["add", "personal/github", "--type", "login", "--field", "username=octo", "--url", "https://github.com"], "pw\n"),
            (["add", "personal/café", "--type", "note", "--expires", "2001-01-01"], "note\n"),
            (["add", "日本/鍵", "--type", "api-key", "--local-only"], "k\n"),
            (["add", "work/aws", "--type", "api-key", "--expires", "2999-12-31", "--tag", "cloud"], "AKIA\n"),
        ]
        for (args, stdin) in adds {
            let r = home.unlocked(args, stdin: stdin)
            #expect(r.status == 0, "\(args): \(r)")
        }
        return (home, try SessionTests.unlock(home))
    }

    static func cachePath(_ home: TestHome, token: String) -> String {
        let id = token.split(separator: ".")[1]
        return home.environment["XDG_RUNTIME_DIR"]! + "/coffer/\(id).listing"
    }

    static func deltaPath(_ home: TestHome, token: String) -> String { cachePath(home, token: token) + "-delta" }

    static func inode(_ path: String) -> (ino: UInt, mode: UInt32, isLink: Bool)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (UInt(st.st_ino), UInt32(st.st_mode & 0o7777), (st.st_mode & S_IFMT) == S_IFLNK)
    }

    /// What each listing command prints through a full listing (the
    /// passphrase: no session, no cache).
    static let commands: [[String]] = [
        ["ls"], ["ls", "work/"], ["ls", "--tree"], ["ls", "--tag", "ai"], ["ls", "--expired"], ["ls", "--json"],
        ["find", "GITHUB"], ["find", "cafe"], ["find", "octo"], ["find", "鍵"], ["find", "zzz"], ["find", "work", "--json"],
    ]

    static func truth(_ home: TestHome) -> [CLIResult] { commands.map { home.unlocked($0) } }

    static func expectSame(_ home: TestHome, token: String, as truth: [CLIResult], sourceLocation: SourceLocation = #_sourceLocation) {
        for (args, want) in zip(commands, truth) {
            let got = home.run(args, env: ["COFFER_SESSION": token])
            #expect(got.status == want.status && got.stdout == want.stdout, "\(args): \(got) instead of \(want)", sourceLocation: sourceLocation)
            #expect(got.stderr.contains("no item matches") == want.stderr.contains("no item matches"), "\(args): \(got.stderr)", sourceLocation: sourceLocation)
        }
    }

    @Test("a session's ls and find print what a full listing prints, and the cache follows every write")
    func sameOutputAndFollowsWrites() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        let truth = Self.truth(home)
        #expect(truth[0].status == 0 && truth[0].stdout.contains("日本/鍵"), "\(truth[0])")
        #expect(truth[7].stdout.contains("personal/café"), "diacritic-insensitive find: \(truth[7])")
        // Built by the first listing, mode 0600; served (not rewritten) by the next.
        Self.expectSame(home, token: token, as: truth)
        let path = Self.cachePath(home, token: token)
        let built = try #require(Self.inode(path))
        #expect(built.mode == 0o600 && !built.isLink)
        Self.expectSame(home, token: token, as: truth)
        #expect(Self.inode(path)?.ino == built.ino, "a fresh cache was rebuilt instead of served")
        // Every kind of write shows at once.
        let writes: [([String], String?)] = [
            (["add", "work/new", "--type", "api-key"], "x\n"), (["rm", "personal/github"], nil),
            (["edit", "work/aws", "--tag", "billing"], nil), (["mv", "work/", "job/"], nil),
        ]
        for (args, stdin) in writes {
            let w = home.run(args, stdin: stdin, env: session)
            #expect(w.status == 0, "\(args): \(w)")
            Self.expectSame(home, token: token, as: Self.truth(home))
        }
        let ls = home.run(["ls"], env: session)
        #expect(ls.stdout.contains("job/new") && !ls.stdout.contains("personal/github") && ls.stdout.contains("#billing"), "\(ls)")
    }

    @Test("a damaged, truncated, forged or emptied cache is never served and is replaced")
    func damagedIsReplaced() throws {
        let (home, token) = try Self.home()
        let truth = Self.truth(home)
        let path = Self.cachePath(home, token: token)
        _ = home.run(["ls"], env: ["COFFER_SESSION": token])
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(good.count > 60 && good.count % 4096 == 60 + 40, "size \(good.count): header, padded plaintext, nonce and tag")
        var flipped = good
        flipped[good.count - 20] ^= 1
        var header = good
        header[40] ^= 1 // inside the stored vault MAC
        for damaged in [flipped, header, good.prefix(100), Data(), Data(repeating: 0x41, count: good.count)] {
            try damaged.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            let before = try #require(Self.inode(path))
            Self.expectSame(home, token: token, as: truth)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == good.count, "not rebuilt")
            #expect(Self.inode(path)?.ino != before.ino)
        }
    }

    @Test("a cache of an earlier state of the vault is not served after a write")
    func staleCopyIsNotServed() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        let path = Self.cachePath(home, token: token)
        _ = home.run(["ls"], env: session)
        let old = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(home.run(["add", "later", "--type", "api-key"], stdin: "v\n", env: session).status == 0)
        #expect(home.run(["rm", "work/openai"], env: session).status == 0)
        try old.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        Self.expectSame(home, token: token, as: Self.truth(home))
        let ls = home.run(["ls"], env: session)
        #expect(ls.stdout.contains("later") && !ls.stdout.contains("work/openai"), "\(ls)")
    }

    @Test("a cache from another vault is not served, even under this vault's header")
    func fromAnotherVault() throws {
        let (home, token) = try Self.home()
        let (other, otherToken) = try Self.home()
        #expect(other.run(["add", "only-in-other", "--type", "api-key"], stdin: "v\n", env: ["COFFER_SESSION": otherToken]).status == 0)
        _ = other.run(["ls"], env: ["COFFER_SESSION": otherToken])
        _ = home.run(["ls"], env: ["COFFER_SESSION": token])
        let path = Self.cachePath(home, token: token)
        let mine = try Data(contentsOf: URL(fileURLWithPath: path))
        let theirs = try Data(contentsOf: URL(fileURLWithPath: Self.cachePath(other, token: otherToken)))
        let truth = Self.truth(home)
        for foreign in [theirs, mine.prefix(60) + theirs.dropFirst(60)] {
            try foreign.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            Self.expectSame(home, token: token, as: truth)
            #expect(!home.run(["ls"], env: ["COFFER_SESSION": token]).stdout.contains("only-in-other"))
        }
    }

    @Test("a cache that is group-readable, another user's mode, or a link is not read")
    func notPrivateIsNotRead() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        let path = Self.cachePath(home, token: token)
        let truth = Self.truth(home)
        _ = home.run(["ls"], env: session)
        for mode: mode_t in [0o644, 0o640, 0o606] {
            chmod(path, mode)
            let before = try #require(Self.inode(path))
            Self.expectSame(home, token: token, as: truth)
            let after = try #require(Self.inode(path))
            #expect(after.ino != before.ino && after.mode == 0o600, "mode \(String(mode, radix: 8)) was served")
        }
        // A link to a valid cache is not followed, and its target is not written.
        let target = home.path("elsewhere.listing")
        try FileManager.default.moveItem(atPath: path, toPath: target)
        let targetBytes = try Data(contentsOf: URL(fileURLWithPath: target))
        symlink(target, path)
        Self.expectSame(home, token: token, as: truth)
        let replaced = try #require(Self.inode(path))
        #expect(!replaced.isLink && replaced.mode == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == targetBytes)
    }

    @Test("an edit made with sqlite3 after the cache was built is still refused by ls and find")
    func sqliteEditStillDetected() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        #expect(home.run(["rm", "work/openai"], env: session).status == 0)
        #expect(home.run(["ls"], env: session).status == 0)
        #expect(home.run(["find", "work"], env: session).status == 0)
        // Leaves the stored vault MAC as it was.
        VaultTamperingTests.sql(home.vaultPath, "UPDATE item SET isDeleted = 0;")
        for args in [["ls"], ["find", "work"], ["ls", "work/"]] {
            VaultTamperingTests.expectModified(home.run(args, env: session))
        }
    }

    @Test("a write's delta brings the cache forward: no record is read again, the output is a full listing's")
    func deltasBringTheCacheForward() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        let path = Self.cachePath(home, token: token)
        let deltas = Self.deltaPath(home, token: token)
        _ = home.run(["ls"], env: session)
        let base = try #require(Self.inode(path))
        let writes: [([String], String?)] = [
            (["add", "work/new", "--type", "api-key", "--tag", "fresh"], "x\n"), (["rm", "personal/github"], nil),
            (["edit", "work/aws", "--tag", "billing", "--expires", "2001-02-03"], nil), (["mv", "work/", "job/"], nil),
            (["edit", "日本/鍵", "--rename", "aaa-first"], nil), (["cp", "job/new", "zzz-last"], nil),
        ]
        for (args, stdin) in writes {
            let w = home.run(args, stdin: stdin, env: session)
            #expect(w.status == 0, "\(args): \(w)")
            Self.expectSame(home, token: token, as: Self.truth(home))
            // Served from the base file and the deltas, not rebuilt.
            #expect(Self.inode(path)?.ino == base.ino, "\(args): the listing was rebuilt")
            let delta = try #require(Self.inode(deltas))
            #expect(delta.mode == 0o600 && !delta.isLink)
        }
        // A write made without the session leaves no delta: the next
        // listing reads the vault and starts over.
        #expect(home.unlocked(["add", "outside", "--type", "api-key"], stdin: "v\n").status == 0)
        Self.expectSame(home, token: token, as: Self.truth(home))
        let rebuilt = try #require(Self.inode(path))
        #expect(rebuilt.ino != base.ino && !FileManager.default.fileExists(atPath: deltas))
        // A long chain is folded into a new base by the listing that reads it.
        for i in 0..<33 {
            #expect(home.run(["edit", "job/new", "--tag", "t\(i)"], env: session).status == 0)
        }
        Self.expectSame(home, token: token, as: Self.truth(home))
        #expect(Self.inode(path)?.ino != rebuilt.ino && !FileManager.default.fileExists(atPath: deltas))
    }

    @Test("a damaged, torn, forged, reordered or foreign delta is never applied wrongly")
    func damagedDeltas() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        let path = Self.cachePath(home, token: token)
        let deltas = Self.deltaPath(home, token: token)
        _ = home.run(["ls"], env: session)
        let base = try Data(contentsOf: URL(fileURLWithPath: path))
        for (i, name) in ["one", "two", "three"].enumerated() {
            #expect(home.run(["add", name, "--type", "api-key", "--tag", "n\(i)"], stdin: "v\n", env: session).status == 0)
        }
        let good = try Data(contentsOf: URL(fileURLWithPath: deltas))
        let truth = Self.truth(home)
        // Three records of equal layout: split them to reorder.
        let size = good.count / 3
        #expect(good.count == size * 3, "records of \(good.count) bytes")
        let reordered = good.suffix(size) + good.prefix(size) + good.dropFirst(size).prefix(size)
        var flipped = good
        flipped[good.count - 10] ^= 1
        var header = good
        header[30] ^= 1 // inside the first record's "from" MAC
        let (other, otherToken) = try Self.home()
        _ = other.run(["ls"], env: ["COFFER_SESSION": otherToken])
        #expect(other.run(["add", "only-in-other", "--type", "api-key"], stdin: "v\n", env: ["COFFER_SESSION": otherToken]).status == 0)
        let foreign = try Data(contentsOf: URL(fileURLWithPath: Self.deltaPath(other, token: otherToken)))
        let cases: [(String, Data, Bool)] = [
            ("reordered", reordered, true), ("flipped", flipped, false), ("header", header, false), ("torn", good.dropLast(7), false),
            ("foreign", foreign, false), ("foreign first", foreign + good, true), ("empty", Data(), false),
        ]
        for (label, bytes, served) in cases {
            try base.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            let before = try #require(Self.inode(path))
            try bytes.write(to: URL(fileURLWithPath: deltas))
            chmod(deltas, 0o600)
            Self.expectSame(home, token: token, as: truth)
            #expect((Self.inode(path)?.ino == before.ino) == served, "\(label)")
            #expect(!home.run(["ls"], env: session).stdout.contains("only-in-other"), "\(label)")
        }
        // Not private, or a link: not read.
        try base.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        try good.write(to: URL(fileURLWithPath: deltas))
        chmod(deltas, 0o644)
        let before = try #require(Self.inode(path))
        Self.expectSame(home, token: token, as: truth)
        #expect(Self.inode(path)?.ino != before.ino)
    }

    @Test("an edit made with sqlite3 after a write's delta is still refused")
    func sqliteEditAfterADelta() throws {
        let (home, token) = try Self.home()
        let session = ["COFFER_SESSION": token]
        _ = home.run(["ls"], env: session)
        #expect(home.run(["rm", "work/openai"], env: session).status == 0)
        #expect(FileManager.default.fileExists(atPath: Self.deltaPath(home, token: token)))
        VaultTamperingTests.sql(home.vaultPath, "UPDATE item SET isDeleted = 0;")
        for args in [["ls"], ["find", "work"]] {
            VaultTamperingTests.expectModified(home.run(args, env: session))
        }
    }

    @Test("lock removes the session's listing cache; an expired session's cache is swept")
    func endsWithItsSession() throws {
        let (home, token) = try Self.home()
        let path = Self.cachePath(home, token: token)
        _ = home.run(["ls"], env: ["COFFER_SESSION": token])
        #expect(home.run(["add", "one-more", "--type", "api-key"], stdin: "v\n", env: ["COFFER_SESSION": token]).status == 0)
        #expect(FileManager.default.fileExists(atPath: path) && FileManager.default.fileExists(atPath: path + "-delta"))
        #expect(home.run(["lock"], env: ["COFFER_SESSION": token]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: path + "-delta"))
        SessionTests.expectSessionRefused(home.run(["ls"], env: ["COFFER_SESSION": token]), mentioning: "session ended", token: token)
        // A cache left without its session file goes with the next sweep.
        let short = try SessionTests.unlock(home, ["--timeout", "1s"])
        let shortPath = Self.cachePath(home, token: short)
        _ = home.run(["ls"], env: ["COFFER_SESSION": short])
        #expect(home.run(["add", "short-lived", "--type", "api-key"], stdin: "v\n", env: ["COFFER_SESSION": short]).status == 0)
        #expect(FileManager.default.fileExists(atPath: shortPath) && FileManager.default.fileExists(atPath: shortPath + "-delta"))
        sleep(2)
        _ = try SessionTests.unlock(home)
        #expect(!FileManager.default.fileExists(atPath: shortPath) && !FileManager.default.fileExists(atPath: shortPath + "-delta"))
    }
}
