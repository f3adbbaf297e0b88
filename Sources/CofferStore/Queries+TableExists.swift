import GRDB

extension Queries {
    /// Whether the main schema has a table named `name` (a table a newer
    /// format added: `keyEpoch`, `keyWrapping`). One indexed look-up in
    /// `sqlite_master`; GRDB's `tableExists` first loads and hashes every
    /// schema object into a set, which cost 1.8 M instructions of a
    /// `coffer add` at 10,000 items (docs/benchmarks-cli.md).
    public static func tableExists(_ db: Database, _ name: String) throws -> Bool { try tableExists(ReadConnection(db), name) }

    public static func tableExists(_ db: ReadConnection, _ name: String) throws -> Bool {
        try db.fetchOne("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE)", [.text(name)]) { row in
            try row.int64(at: 0, name: "table_exists") != 0
        } ?? false
    }
}
