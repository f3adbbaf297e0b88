import CofferStore
import CofferTestSupport
import Foundation
import GRDB
import Testing

/// What CofferStore says about a file that is not (or no longer) a vault it
/// can read: each case is a ``StoreError`` that CofferKit turns into its
/// exit code (docs/exit-codes.md), never a crash and never a write.
@Suite("CofferStore: opening and creating vault files")
struct VaultFileOpeningTests {
    @Test func aCreatedVaultOpensWithItsHeader() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let header = StoreFixture.header()
        let created = try StoreFixture.create(dir.path("v/vault.coffer"), header: header)
        #expect(try created.read { db in try Queries.header(db) } == header)
        let opened = try VaultStore.open(path: dir.path("v/vault.coffer"))
        #expect(try opened.read { db in try Queries.header(db) } == header)
        #expect(try opened.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == VaultStore.formatVersion)
    }

    @Test func aMissingFileIsNotFound() {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let path = dir.path("nope.coffer")
        #expect(throws: StoreError.notFound(path: path)) { try VaultStore.open(path: path) }
    }

    @Test func aFolderIsNotAVault() {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        #expect(throws: StoreError.notAVault(path: dir.url.path, reason: "not a regular file")) { try VaultStore.open(path: dir.url.path) }
    }

    @Test func aFileThatIsNotSQLiteIsNotAVault() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let path = dir.path("notes.txt")
        try Data(String(repeating: "not a database, just some notes\n", count: 64).utf8).write(to: URL(fileURLWithPath: path))
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let e = StoreFixture.storeError { _ = try VaultStore.open(path: path) }
        guard case .notAVault(let named, let reason) = e else {
            Issue.record("expected notAVault, got \(String(describing: e))")
            return
        }
        #expect(named == path)
        #expect(reason.contains("not a Coffer vault"), "\(reason)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "nothing is written")
    }

    @Test func anEmptyFileOrAnotherAppsDatabaseIsNotAVault() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let empty = dir.path("empty.coffer")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(throws: StoreError.notAVault(path: empty, reason: "no Coffer schema in this SQLite file")) { try VaultStore.open(path: empty) }

        let other = dir.path("other.sqlite")
        try StoreFixture.edit(other, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x')")
        #expect(throws: StoreError.notAVault(path: other, reason: "no Coffer schema in this SQLite file")) { try VaultStore.open(path: other) }
    }

    @Test func aNewerFormatIsRefusedUntouched() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let path = dir.path("vault.coffer")
        _ = try StoreFixture.create(path)
        let newer = VaultStore.formatVersion + 1
        try StoreFixture.edit(path, "PRAGMA user_version = \(newer)")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: StoreError.newerFormat(path: path, found: newer, supported: VaultStore.formatVersion)) {
            try VaultStore.open(path: path)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aTriggerIsRefusedUnlessOnlyReading() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let path = dir.path("vault.coffer")
        _ = try StoreFixture.create(path)
        try StoreFixture.edit(path, "CREATE TRIGGER planted AFTER INSERT ON replica BEGIN SELECT 1; END")
        let e = StoreFixture.storeError { _ = try VaultStore.open(path: path) }
        guard case .damaged(let what) = e else {
            Issue.record("expected damaged, got \(String(describing: e))")
            return
        }
        #expect(what.contains("trigger 'planted' on table 'replica'"), "\(what)")
        // `coffer verify` opens it to name the trigger.
        let verifying = try VaultStore.open(path: path, allowingTriggers: true)
        #expect(try verifying.read { db in try Queries.firstTrigger(db)?.name } == "planted")
    }

    @Test func createRefusesAnExistingFile() throws {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let path = dir.path("vault.coffer")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("mine".utf8)))
        #expect(throws: StoreError.alreadyExists(path: path)) { try StoreFixture.create(path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("mine".utf8))
    }
}
