import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// SafeRow (Sources/CofferStore/SafeRow.swift): every column read from a
/// vault file is checked. A missing column, a value of the wrong type or out
/// of range is ``StoreError/damaged(_:)`` (exit 65 once CofferKit words it),
/// never a trap.
@Suite("CofferStore: SafeRow refuses what coffer never writes")
struct SafeRowTests {
    /// One row holding a value of each kind SQLite stores.
    static func sample() throws -> Row {
        let queue = try DatabaseQueue()
        return try queue.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT 1 AS one, 2 AS two, -1 AS minus, 4294967296 AS big32, 9007199254740993 AS overCounter,
                      9007199254740992 AS maxCounter, 1.5 AS real, 'text' AS word, x'00ff' AS bytes, NULL AS nullValue
                    """)!
        }
    }

    @Test func valuesInRangeAreRead() throws {
        let row = try Self.sample()
        #expect(try row.int64("one", table: "t") == 1)
        #expect(try row.int64("minus", table: "t") == -1)
        #expect(try row.optionalInt64("nullValue", table: "t") == nil)
        #expect(try row.optionalInt64("two", table: "t") == 2)
        #expect(try row.uint32("one", table: "t", in: 1...5) == 1)
        #expect(try row.counter("maxCounter", table: "t") == UInt64(StoredLimits.maxCounter))
        #expect(try row.bool("one", table: "t"))
        #expect(try row.blob("bytes", table: "t", length: 2) == Data([0x00, 0xff]))
        #expect(try row.optionalBlob("nullValue", table: "t") == nil)
        #expect(try row.text("word", table: "t") == "text")
        #expect(try row.optionalText("nullValue", table: "t") == nil)
        #expect(try row.int64(at: 1, name: "two") == 2)
        #expect(try row.counter(at: 0, name: "one") == 1)
        #expect(try row.bool(at: 0, name: "one"))
        #expect(try row.blob(at: 8, name: "bytes") == Data([0x00, 0xff]))
        #expect(try row.optionalBlob(at: 9, name: "nullValue") == nil)
    }

    @Test func aMissingColumnIsDamaged() throws {
        let row = try Self.sample()
        #expect(throws: StoreError.damaged("column t.absent is missing")) { try row.int64("absent", table: "t") }
        #expect(throws: StoreError.damaged("column t.absent is missing")) { try row.optionalText("absent", table: "t") }
        #expect(throws: StoreError.damaged("column tenth is missing")) { try row.int64(at: 10, name: "tenth") }
        #expect(throws: StoreError.damaged("column before is missing")) { try row.blob(at: -1, name: "before") }
    }

    @Test func aValueOfTheWrongTypeIsDamaged() throws {
        let row = try Self.sample()
        #expect(throws: StoreError.damaged("t.word is not an integer")) { try row.int64("word", table: "t") }
        #expect(throws: StoreError.damaged("t.real is not an integer")) { try row.int64("real", table: "t") }
        #expect(throws: StoreError.damaged("t.bytes is not an integer")) { try row.optionalInt64("bytes", table: "t") }
        #expect(throws: StoreError.damaged("t.word is not an integer")) { try row.bool("word", table: "t") }
        #expect(throws: StoreError.damaged("t.one is not a blob")) { try row.blob("one", table: "t") }
        #expect(throws: StoreError.damaged("t.word is not a blob")) { try row.optionalBlob("word", table: "t") }
        #expect(throws: StoreError.damaged("t.one is not text")) { try row.text("one", table: "t") }
        #expect(throws: StoreError.damaged("t.bytes is not text")) { try row.optionalText("bytes", table: "t") }
        #expect(throws: StoreError.damaged("t.nullValue is not text")) { try row.text("nullValue", table: "t") }
        #expect(throws: StoreError.damaged("t.nullValue is not an integer")) { try row.int64("nullValue", table: "t") }
        #expect(throws: StoreError.damaged("word is not an integer")) { try row.int64(at: 7, name: "word") }
        #expect(throws: StoreError.damaged("one is not a blob")) { try row.optionalBlob(at: 0, name: "one") }
    }

    @Test func aValueOutOfRangeIsDamaged() throws {
        let row = try Self.sample()
        #expect(throws: StoreError.damaged("t.two is out of range (2)")) { try row.int64("two", table: "t", in: 0...1) }
        #expect(throws: StoreError.damaged("t.two is out of range (2)")) { try row.bool("two", table: "t") }
        #expect(throws: StoreError.damaged("t.minus is out of range (-1)")) { try row.bool("minus", table: "t") }
        #expect(throws: StoreError.damaged("t.minus is out of range (-1)")) { try row.uint32("minus", table: "t", in: 0 ... .max) }
        #expect(throws: StoreError.damaged("t.big32 is out of range (4294967296)")) {
            try row.uint32("big32", table: "t", in: StoredLimits.kdfParameter)
        }
        #expect(throws: StoreError.damaged("t.minus is out of range (-1)")) { try row.counter("minus", table: "t") }
        #expect(throws: StoreError.damaged("t.overCounter is out of range (9007199254740993)")) { try row.counter("overCounter", table: "t") }
        #expect(throws: StoreError.damaged("t.one is out of range (1)")) { try row.counter("one", table: "t", minimum: 2) }
        #expect(throws: StoreError.damaged("overCounter is out of range (9007199254740993)")) { try row.counter(at: 4, name: "overCounter") }
        #expect(throws: StoreError.damaged("two is out of range (2)")) { try row.bool(at: 1, name: "two") }
        #expect(throws: StoreError.damaged("t.bytes has 2 bytes instead of 16")) { try row.blob("bytes", table: "t", length: 16) }
        #expect(throws: StoreError.damaged("bytes has 2 bytes instead of 1")) { try row.blob(at: 8, name: "bytes", length: 1) }
    }

    /// The same checks on a real vault file changed outside coffer: the
    /// query names the column (and the file), never the value's neighbours.
    @Test func queriesOfAChangedVaultFileAreDamaged() throws {
        let cases: [(sql: String, read: @Sendable (Database) throws -> Void, names: String)] = [
            ("UPDATE vault SET kdfMemoryKiB = 4294967296", { db in _ = try Queries.header(db) }, "vault.kdfMemoryKiB is out of range (4294967296)"),
            ("UPDATE vault SET formatVersion = 0", { db in _ = try Queries.header(db) }, "vault.formatVersion is out of range (0)"),
            ("UPDATE vault SET createdAt = 'yesterday'", { db in _ = try Queries.header(db) }, "vault.createdAt is not an integer"),
            ("UPDATE localReplica SET counter = 9007199254740993", { db in _ = try Queries.localReplica(db) }, "localReplica.counter is out of range"),
            ("UPDATE localReplica SET boundHost = x'00'", { db in _ = try Queries.localReplica(db) }, "localReplica.boundHost is not text"),
        ]
        for c in cases {
            let dir = TemporaryDirectory(prefix: "coffer-store")
            let path = dir.path("vault.coffer")
            _ = try StoreFixture.create(path)
            try StoreFixture.edit(path, c.sql)
            let store = try VaultStore.open(path: path)
            let e = StoreFixture.storeError { try store.read { db in try c.read(db) } }
            guard case .damaged(let what) = e else {
                Issue.record("\(c.sql): expected damaged, got \(String(describing: e))")
                continue
            }
            #expect(what.hasPrefix(c.names), "\(c.sql): \(what)")
            #expect(what.hasSuffix("(in \(path))"), "\(c.sql): \(what)")
        }
    }
}
