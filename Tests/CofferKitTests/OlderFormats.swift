import CofferStore
import Foundation
import GRDB

@testable import CofferKit

/// Stands in for an older coffer: sets a vault back to what the build of
/// vault format `format` (3, 4 or 5) wrote, from its rows as they are and
/// with the key — the header's format number, the MAC by that format's
/// rules ("I" over the whole record, one "V" per current version; no terms
/// for sync's bookkeeping before format 4), and without the tables,
/// columns and migration records it did not have yet. The vault must
/// never have been rekeyed (format 5's key epoch table is dropped).
func setBack(_ v: Vault, toFormat format: Int) throws {
    precondition((3...5).contains(format))
    try v.store.writeImmediate { db in
        try db.execute(sql: "UPDATE vault SET formatVersion = ?", arguments: [format])
        let mac = VaultMAC(key: v.keys.mac)
        try Queries.computeMAC(db, into: mac, rules: .format5(bookkeeping: format >= 4))
        try Queries.setStoredMAC(db, mac)
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v6-item-terms'")
        if format < 5 {
            try db.execute(sql: "DROP TABLE keyEpoch")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v5-key-epoch'")
        }
        if format < 4 {
            try db.execute(sql: "ALTER TABLE vaultIntegrity DROP COLUMN areaMacs")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v4-sync-bookkeeping-mac'")
        }
        try db.execute(sql: "PRAGMA user_version = \(format)")
    }
}
