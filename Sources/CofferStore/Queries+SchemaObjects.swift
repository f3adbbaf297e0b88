import CofferSync
import Foundation
import GRDB

/// What the file's schema holds beyond (or instead of) what the migrations
/// make (Schemas/vault.sql): a trigger, a view, an index or a table coffer
/// never creates, a table or index defined differently, and the journal
/// mode. `coffer verify` names each (issue 24); opening a vault refuses a
/// trigger outright (``VaultStore/open(path:allowingTriggers:)``).
extension Queries {
    /// One object of `sqlite_master`.
    public struct SchemaObject: Sendable, Hashable {
        public var type: String
        public var name: String
        public var table: String
        public var sql: String?
    }

    /// The first trigger of the file's schema, if any: one look-up in
    /// `sqlite_master` (a few rows, already in SQLite's page cache once
    /// any statement ran). Coffer never creates a trigger; one planted
    /// with sqlite3 fires on coffer's own writes, after the vault MAC's
    /// terms were computed from what coffer meant to write.
    public static func firstTrigger(_ db: Database) throws -> SchemaObject? { try firstTrigger(ReadConnection(db)) }

    public static func firstTrigger(_ db: ReadConnection) throws -> SchemaObject? {
        try db.fetchOne("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' ORDER BY name LIMIT 1") { row in
            SchemaObject(
                type: "trigger", name: (try? row.text(at: 0, name: "sqlite_master.name")) ?? "?",
                table: (try? row.text(at: 1, name: "sqlite_master.tbl_name")) ?? "?", sql: nil)
        }
    }

    static func schemaObjects(_ db: Database) throws -> [SchemaObject] {
        try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").map {
            SchemaObject(type: $0["type"] ?? "?", name: $0["name"] ?? "?", table: $0["tbl_name"] ?? "?", sql: $0["sql"])
        }
    }

    /// The schema the migrations make, from an empty database in memory
    /// (built once per process).
    static let expectedSchema: [SchemaObject] = {
        do {
            let queue = try DatabaseQueue()
            try Migrations.migrator.migrate(queue)
            return try queue.read { try schemaObjects($0) }
        } catch {
            return []
        }
    }()

    /// One line per way the file's schema differs from a Coffer vault's,
    /// naming the object (never a row). Objects SQLite makes itself
    /// (`sqlite_autoindex_…`, `sqlite_stat1` after an ANALYZE) are left
    /// out; GRDB's migration table is compared by name only (its
    /// definition is GRDB's, not the format's).
    public static func schemaProblems(_ db: Database) throws -> [String] {
        let expected = expectedSchema
        guard !expected.isEmpty else { return ["the expected schema could not be built (a bug: please report it)"] }
        func key(_ o: SchemaObject) -> String { o.type + " " + o.name }
        func text(_ s: String?) -> String { (s ?? "").split(whereSeparator: { $0.isWhitespace }).joined(separator: " ") }
        var wanted: [String: SchemaObject] = [:]
        for o in expected where !o.name.hasPrefix("sqlite_") { wanted[key(o)] = o }
        var problems: [String] = []
        var seen = Set<String>()
        for o in try schemaObjects(db) where !o.name.hasPrefix("sqlite_") {
            seen.insert(key(o))
            switch o.type {
            case "trigger":
                problems.append("a trigger '\(o.name)' on table '\(o.table)', which coffer never creates: it would change rows as coffer writes them")
            case "view":
                problems.append("a view '\(o.name)', which coffer never creates")
            default:
                guard let w = wanted[key(o)] else {
                    problems.append(
                        "\(o.type == "index" ? "an index" : "a \(o.type)") '\(o.name)'\(o.type == "index" ? " on table '\(o.table)'" : ""), which coffer never creates"
                    )
                    continue
                }
                if !o.name.hasPrefix("grdb_"), text(o.sql) != text(w.sql) {
                    problems.append("the \(o.type) '\(o.name)' is defined differently from a Coffer vault's (Schemas/vault.sql)")
                }
            }
        }
        for (k, w) in wanted.sorted(by: { $0.key < $1.key }) where !seen.contains(k) {
            problems.append("the \(w.type) '\(w.name)' of a Coffer vault is missing")
        }
        if let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode"), mode.lowercased() != "delete" {
            problems.append(
                "the vault is in \(mode.uppercased()) journal mode, not coffer's rollback journal (DELETE): set it back with `sqlite3 VAULT 'PRAGMA journal_mode=DELETE'`"
            )
        }
        return problems
    }
}

extension Queries {
    /// An item id that has current or history versions but no `item` row,
    /// if any. A row deleted outside coffer takes its name hash with it, so
    /// a lookup by name cannot tell the item from one never added; this
    /// can. Visits each item id of the version tables once (a seek per id,
    /// not a scan of the versions): O(items), so it is for the error path
    /// a person reads, never for a lookup (docs/threat-model.md).
    /// Returns the id's bytes (whatever their length: the id column of a
    /// version table is not checked here).
    public static func itemWithoutRow(_ db: Database) throws -> [UInt8]? { try itemWithoutRow(ReadConnection(db)) }

    public static func itemWithoutRow(_ db: ReadConnection) throws -> [UInt8]? {
        for table in ["fieldVersion", "fieldHistory"] {
            let sql = """
                WITH RECURSIVE ids(x) AS (
                  SELECT (SELECT min(itemId) FROM \(table))
                  UNION ALL SELECT (SELECT min(itemId) FROM \(table) WHERE itemId > x) FROM ids WHERE x IS NOT NULL)
                SELECT x FROM ids WHERE x IS NOT NULL AND NOT EXISTS (SELECT 1 FROM item WHERE itemId = x) LIMIT 1
                """
            // The id's bytes whatever its type (GRDB's `Data` took a text's
            // UTF-8 bytes too).
            if let bytes = try db.fetchOne(sql, [], { row in try row.rawBytes(at: 0) }) { return bytes }
        }
        return nil
    }
}

extension Queries {
    /// SQLite's `user_version`: the vault format the migrations brought
    /// the file to (0 for a file coffer never set up).
    public static func userVersion(_ db: ReadConnection) throws -> Int {
        Int(try db.fetchOne("PRAGMA user_version") { row in try row.int64(at: 0, name: "user_version") } ?? 0)
    }
}
