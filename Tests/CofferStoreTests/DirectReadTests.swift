import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// ``VaultStore/readDirect(_:)``: the read verbs' queries on SQLite's C API,
/// without GRDB's queue, until something needs GRDB (issue 28 item 6).
@Suite("CofferStore: direct reads")
struct DirectReadStoreTests {
    static func vault() throws -> (TemporaryDirectory, String, VaultHeader) {
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let header = StoreFixture.header()
        _ = try StoreFixture.create(dir.path("v/vault.coffer"), header: header)
        return (dir, dir.path("v/vault.coffer"), header)
    }

    @Test func openingAndReadingBuildNoGRDBQueueUntilAWriteNeedsIt() throws {
        let (dir, path, header) = try Self.vault()
        defer { withExtendedLifetime(dir) {} }
        let store = try VaultStore.open(path: path)
        #expect(!store.hasGRDBQueue, "open reads through the direct connection")
        let (read, version, epoch, mac, stamp) = try store.readDirect { db in
            (try Queries.header(db), try Queries.userVersion(db), try Queries.keyEpoch(db), try Queries.storedMAC(db), try Queries.listingStamp(db))
        }
        #expect(read == header)
        #expect(version == VaultStore.formatVersion)
        #expect(epoch.check == nil)
        #expect(mac?.count == VaultMAC.length)
        #expect(try store.readDirect { db in try Queries.listedItems(db) }.isEmpty)
        #expect(!store.hasGRDBQueue)
        // GRDB's read of the same rows gives the same answers, and from
        // then on the direct reads run on GRDB's connection.
        #expect(try store.read { db in try Queries.header(db) } == header)
        #expect(store.hasGRDBQueue)
        let again = try store.readDirect { db in (try Queries.header(db), try Queries.listingStamp(db)) }
        #expect(again.0 == header)
        #expect(again.1 == stamp)
    }

    @Test func directReadsLeaveTheFileAsItWas() throws {
        let (dir, path, _) = try Self.vault()
        defer { withExtendedLifetime(dir) {} }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let store = try VaultStore.open(path: path)
        _ = try store.readDirect { db in try Queries.header(db) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
    }

    /// The connection is `query_only`, as GRDB's reads are: a statement
    /// that writes is refused, whatever the caller runs.
    @Test func theDirectConnectionCannotWrite() throws {
        let (dir, path, _) = try Self.vault()
        defer { withExtendedLifetime(dir) {} }
        let store = try VaultStore.open(path: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let e = StoreFixture.storeError {
            try store.readDirect { db in try db.forEachRow("DELETE FROM replica") { _ in } }
        }
        guard case .readOnly = e else {
            Issue.record("expected readOnly, got \(String(describing: e))")
            return
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// The store used from inside one of its own direct reads is an error,
    /// never a deadlock nor a connection closed under a running statement.
    @Test func theStoreUsedInsideItsOwnDirectReadIsAnError() throws {
        let (dir, path, header) = try Self.vault()
        defer { withExtendedLifetime(dir) {} }
        let store = try VaultStore.open(path: path)
        for nested in [0, 1] {
            let e = StoreFixture.storeError {
                try store.readDirect { _ in
                    if nested == 0 {
                        _ = try store.read { db in try Queries.header(db) }
                    } else {
                        _ = try store.readDirect { db in try Queries.header(db) }
                    }
                }
            }
            #expect(e == .database("the vault store was used inside one of its own reads"))
        }
        // The store still works, through the direct connection.
        #expect(try store.readDirect { db in try Queries.header(db) } == header)
        #expect(!store.hasGRDBQueue)
    }

    /// A row the direct path reads is checked as SafeRow checks GRDB's:
    /// the wrong type or length is `damaged`, named after the file.
    @Test func aDamagedRowIsDamagedOnTheDirectPath() throws {
        let (dir, path, _) = try Self.vault()
        defer { withExtendedLifetime(dir) {} }
        try StoreFixture.edit(path, "PRAGMA ignore_check_constraints = 1; UPDATE vault SET kdfSalt = 'salt'")
        let store = try VaultStore.open(path: path)
        let e = StoreFixture.storeError { _ = try store.readDirect { db in try Queries.header(db) } }
        #expect(e == .damaged("vault.kdfSalt is not a blob (in \(path))"))
    }
}
