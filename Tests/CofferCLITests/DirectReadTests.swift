import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The read verbs with a shell session (`get`, `show`, `otp`, `ls`, `find`:
/// the fast path) read the vault through SQLite's C API, without GRDB's
/// queue (issue 28 item 6, docs/benchmarks.md). They must refuse every
/// edit and every damage the GRDB path refused, with the same exit code
/// and message, leave the file as it was, and wait for a writer as GRDB's
/// busy timeout did.
@Suite("the read verbs' direct SQLite path, black-box")
struct DirectReadTests {
    static let apiSecret = "SECRET-API-KEY"
    static let loginSecret = "SECRET-LOGIN-PW"

    /// A vault with an API key and a login with a TOTP secret, and a
    /// session token for it.
    static func homeWithSession() throws -> (TestHome, String) {
        let home = TestHome()
        home.initVault()
        var r = home.unlocked(["add", "work/api", "--type", "api-key"], stdin: apiSecret + "\n")
        #expect(r.status == 0, "\(r)")
        r = home.unlocked(["add", "personal/github", "--type", "login", "--field", "username=octo"], stdin: loginSecret + "\n")
        #expect(r.status == 0, "\(r)")
        r = home.unlocked(["edit", "personal/github", "--totp"], stdin: "otpauth://totp/GitHub:octo?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\n")
        #expect(r.status == 0, "\(r)")
        return (home, try SessionTests.unlock(home))
    }

    static func run(_ home: TestHome, _ token: String, _ args: [String]) -> CLIResult {
        home.run(args, env: ["COFFER_SESSION": token])
    }

    /// The read verbs' fast-path forms (FastPath.swift).
    static let reads: [[String]] = [["get", "work/api"], ["show", "work/api"], ["otp", "personal/github"], ["ls"], ["find", "api"]]

    static func expectRefused(
        _ r: CLIResult, _ args: [String], status: Int32 = 65, saying phrases: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == status, "\(args): \(r)", sourceLocation: sourceLocation)
        let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: error: ") }
        #expect(errors.count == 1, "one error line: \(r)", sourceLocation: sourceLocation)
        for p in phrases { #expect(r.stderr.contains(p), "\(args) should say '\(p)': \(r)", sourceLocation: sourceLocation) }
        for s in [apiSecret, loginSecret] {
            #expect(!r.stdout.contains(s) && !r.stderr.contains(s), "a secret was printed: \(r)", sourceLocation: sourceLocation)
        }
    }

    @Test func aSoundVaultIsServedAndLeftAsItWas() throws {
        let (home, token) = try Self.homeWithSession()
        let before = home.vaultBytes()
        #expect(Self.run(home, token, ["get", "work/api"]).out == Self.apiSecret)
        #expect(Self.run(home, token, ["get", "personal/github"]).out == Self.loginSecret)
        let show = Self.run(home, token, ["show", "personal/github"])
        #expect(show.status == 0 && show.stdout.contains("username  octo") && !show.stdout.contains(Self.loginSecret), "\(show)")
        let otp = Self.run(home, token, ["otp", "personal/github"])
        #expect(otp.status == 0 && otp.out.count == 6 && otp.out.allSatisfy(\.isNumber), "\(otp)")
        for args in [["ls"], ["find", "github"], ["ls", "work"]] {
            let r = Self.run(home, token, args)
            #expect(r.status == 0, "\(args): \(r)")
        }
        #expect(Self.run(home, token, ["ls"]).stdout.contains("personal/github"))
        let miss = Self.run(home, token, ["get", "api"])
        #expect(miss.status == 66 && miss.stderr.contains("no item named 'api'") && miss.stderr.contains("work/api"), "\(miss)")
        #expect(home.vaultBytes() == before, "reads never write the file")
    }

    /// Edits made with sqlite3 (no key): each read verb that reads the
    /// edited rows refuses them (65, "modified outside coffer", one
    /// error line, no secret), and the failing command writes nothing.
    @Test(arguments: [
        // A value changed: every current version's payload zeroed.
        ("UPDATE fieldVersion SET payload = zeroblob(length(payload));", ["get", "show", "otp"], "differ from its integrity record"),
        // An item's integrity record changed.
        ("UPDATE item SET record = zeroblob(length(record));", ["get", "show", "otp", "ls", "find"], "fails authentication"),
        // Item rows deleted, their versions left behind.
        ("PRAGMA foreign_keys = OFF; DELETE FROM item;", ["get", "show", "otp"], "but no item row"),
        // The vault MAC's row deleted.
        ("DELETE FROM vaultIntegrity;", ["get", "show", "otp", "ls", "find"], "the vault MAC is missing"),
        // Live items marked deleted (their names then find nothing, 66, as
        // before; the listing checks the flag against each record).
        ("UPDATE item SET isDeleted = 1;", ["ls", "find"], "the deleted flag of item"),
    ])
    func sqliteEditsAreRefused(_ statement: String, _ refusing: [String], _ phrase: String) throws {
        let (home, token) = try Self.homeWithSession()
        // A cached listing first, so ls and find must notice the edit too.
        #expect(Self.run(home, token, ["ls"]).status == 0)
        VaultTamperingTests.sql(home.vaultPath, statement)
        let before = home.vaultBytes()
        for args in Self.reads where refusing.contains(args[0]) {
            Self.expectRefused(Self.run(home, token, args), args, saying: ["vault file was modified outside coffer", phrase])
        }
        #expect(home.vaultBytes() == before)
    }

    /// A damaged or replaced file: every read verb says the file is not a
    /// Coffer vault (65), as opening it through GRDB said, and nothing is
    /// written.
    @Test(arguments: ["truncated", "overwritten", "text", "empty", "other database"])
    func aDamagedOrReplacedFileIsNotAVault(_ damage: String) throws {
        let (home, token) = try Self.homeWithSession()
        let path = home.vaultPath
        let bytes = home.vaultBytes()
        #expect(bytes.count > 4 * 4096)
        var reason = "not a Coffer vault (SQLite reports: "
        switch damage {
        case "truncated":
            // Page 1 (the schema) alone: the tables' pages are gone.
            try bytes.prefix(4096).write(to: URL(fileURLWithPath: path))
            reason += "database disk image is malformed)"
        case "overwritten":
            // Everything after the schema page overwritten.
            try (bytes.prefix(4096) + Data(repeating: 0xA5, count: bytes.count - 4096)).write(to: URL(fileURLWithPath: path))
            reason += "database disk image is malformed)"
        case "text":
            try Data(String(repeating: "not a database\n", count: 400).utf8).write(to: URL(fileURLWithPath: path))
            reason += "file is not a database)"
        case "empty":
            try Data().write(to: URL(fileURLWithPath: path))
            reason = "no Coffer schema in this SQLite file"
        default:
            try FileManager.default.removeItem(atPath: path)
            VaultTamperingTests.sql(path, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello');")
            reason = "no Coffer schema in this SQLite file"
        }
        let before = home.vaultBytes()
        for args in Self.reads {
            Self.expectRefused(Self.run(home, token, args), args, saying: ["\(path) is not a Coffer vault: \(reason)"])
        }
        #expect(home.vaultBytes() == before, "nothing is written")
        #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
    }

    /// A folder where the vault should be, and a vault the user may not
    /// read: the checks before SQLite opens anything.
    @Test func aFolderOrAnUnreadableFileIsRefusedBeforeSQLite() throws {
        let (home, token) = try Self.homeWithSession()
        let path = home.vaultPath
        try FileManager.default.moveItem(atPath: path, toPath: path + ".kept")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        for args in Self.reads {
            Self.expectRefused(Self.run(home, token, args), args, saying: ["\(path) is not a Coffer vault: not a regular file"])
        }
        try FileManager.default.removeItem(atPath: path)
        let gone = Self.run(home, token, ["get", "work/api"])
        Self.expectRefused(gone, ["get"], status: 66, saying: ["no vault at \(path)"])
    }

    /// A writer holding the vault (an exclusive lock, as a commit takes):
    /// a read waits for it, as GRDB's 5-second busy timeout did, and is
    /// served once it is released; a lock held longer is "busy" (75).
    @Test func aReadWaitsForAWriterAndGivesUpAfterTheBusyTimeout() throws {
        let (home, token) = try Self.homeWithSession()
        for (hold, expectServed) in [(1.5, true), (8.0, false)] {
            let flag = home.path("locked-\(hold)")
            let script = """
                import sqlite3, sys, time
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                c.execute("BEGIN EXCLUSIVE")
                open(sys.argv[2], "w").close()
                time.sleep(float(sys.argv[3]))
                c.execute("ROLLBACK")
                """
            guard
                let holder = Spawn.start(
                    "python3", ["-c", script, home.vaultPath, flag, String(hold)], environment: home.environment, workDir: home.root.path)
            else {
                Issue.record("python3 did not start")
                return
            }
            var waited = 0
            while !FileManager.default.fileExists(atPath: flag) && waited < 300 {
                usleep(20_000)
                waited += 1
            }
            #expect(FileManager.default.fileExists(atPath: flag), "the lock was taken")
            let r = Self.run(home, token, ["get", "work/api"])
            if expectServed {
                #expect(r.status == 0 && r.out == Self.apiSecret, "\(r)")
            } else {
                Self.expectRefused(r, ["get"], status: 75, saying: ["is busy"])
            }
            #expect(holder.wait(timeout: 30).status == 0)
        }
    }
}
