import GRDB

extension Queries {
    /// Whether the main schema has a table named `name` (a table a newer
    /// format added: `keyEpoch`, `keyWrapping`). One indexed look-up in
    /// `sqlite_master`; GRDB's `tableExists` first loads and hashes every
    /// schema object into a set, which cost 1.8 M instructions of a
    /// `coffer add` at 10,000 items (docs/benchmarks-cli.md).
    public static func tableExists(_ db: Database, _ name: String) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE)",
            arguments: [name]) ?? false
    }
}
