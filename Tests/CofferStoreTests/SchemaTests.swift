import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferStore

@Suite("Vault schema")
struct SchemaTests {
    static func normalized(_ sql: [String]) -> [String] {
        sql.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }.sorted()
    }

    /// Schemas/vault.sql is the normative schema: the migrations must
    /// produce exactly it.
    @Test func migrationsMatchSchemasVaultSQL() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sql = try String(contentsOf: root.appendingPathComponent("Schemas/vault.sql"), encoding: .utf8)
        let reference = try DatabaseQueue()
        try reference.write { db in try db.execute(sql: sql) }
        let expected = try reference.read { db in try Queries.schemaSQL(db) }
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let store = try StoreFixture.create(dir.path("v/vault.coffer"))
        let actual = try store.read { db in try Queries.schemaSQL(db) }
        #expect(!expected.isEmpty)
        #expect(Self.normalized(actual) == Self.normalized(expected))
        let version = try store.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(version == VaultStore.formatVersion)
    }

    /// The same from the migrations alone, on an empty database: what
    /// `coffer verify` compares a file's schema with (`schemaProblems`).
    @Test func theMigrationsAloneMakeSchemasVaultSQL() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sql = try String(contentsOf: root.appendingPathComponent("Schemas/vault.sql"), encoding: .utf8)
        let reference = try DatabaseQueue()
        try reference.write { db in try db.execute(sql: sql) }
        let expected = try reference.read { db in try Queries.schemaSQL(db) }
        let migrated = try DatabaseQueue()
        try Migrations.migrator.migrate(migrated)
        #expect(Self.normalized(try migrated.read { db in try Queries.schemaSQL(db) }) == Self.normalized(expected))
        #expect(try migrated.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == VaultStore.formatVersion)
        // A new vault file is what `coffer verify` expects, to the journal mode.
        let dir = TemporaryDirectory(prefix: "coffer-store")
        let store = try StoreFixture.create(dir.path("vault.coffer"))
        #expect(try store.read { db in try Queries.schemaProblems(db) } == [])
    }
}
