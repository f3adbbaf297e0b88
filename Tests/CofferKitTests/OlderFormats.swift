import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import GRDB

@testable import CofferKit

/// Stands in for an older coffer: sets a vault back to what the build of
/// vault format `format` (3, 4 or 5) wrote, from its rows as they are and
/// with the key — format-1 item records (the versions' list), the
/// header's format number, the MAC by that format's rules ("I" over the
/// whole record, one "V" per current version; no terms for sync's
/// bookkeeping before format 4), and the schema of that format
/// (``setBackSchema(_:toFormat:)``), and the master key wrapped as
/// builds before format 7 wrapped it (``wrapAsLegacy(_:_:passphrase:)``).
/// The vault must never have been rekeyed (format 5's key epoch table is
/// dropped).
func setBack(_ v: Vault, toFormat format: Int, passphrase: SecretBytes = SecretBytes(copying: Array("pw".utf8))) throws {
    precondition((3...5).contains(format))
    try v.store.writeImmediate { db in
        try wrapAsLegacy(v, db, passphrase: passphrase)
        for listed in try Queries.listedItems(db) {
            let id = listed.row.id
            let state = try Queries.cachedItemState(db, id: id)
            let record = try v.openRecord(listed.record, item: id)
            let plain = IntegrityEncodingTests.referenceFormat1Record(record, refs: IntegrityEncodingTests.refs(of: state))
            let sealed = AEAD.seal(plain, key: v.keys.record, associatedData: ItemRecord.associatedData(vault: v.vaultID, item: id))
            try Queries.replaceItemRecord(db, id: id, record: sealed)
        }
        try db.execute(sql: "UPDATE vault SET formatVersion = ?", arguments: [format])
        let mac = VaultMAC(key: v.keys.mac)
        try Queries.computeMAC(db, into: mac, rules: .format5(bookkeeping: format >= 4))
        try Queries.setStoredMAC(db, mac)
        try setBackSchema(db, toFormat: format)
    }
}

/// Wraps the master key again under `passphrase` (a fresh salt, the
/// stored KDF parameters) with the associated data of the builds before
/// vault format 7 (`coffer-wrap-v1`, epoch 0), and stores it in the
/// header; the MAC is left to the caller.
func wrapAsLegacy(_ v: Vault, _ db: Database, passphrase: SecretBytes) throws {
    let h = try Queries.header(db)
    let kdf = KDFParameters(memoryKiB: h.kdfMemoryKiB, iterations: h.kdfIterations, parallelism: h.kdfParallelism)
    let w = try KeyHierarchy.wrapMasterKey(v.masterKey, passphrase: passphrase, vault: v.vaultID, kdf: kdf, binding: .legacy)
    try db.execute(sql: "UPDATE vault SET kdfSalt = ?, wrappedMasterKey = ?", arguments: [Data(w.salt), Data(w.wrapped)])
}

/// The schema of format `format` (3, 4 or 5), without a key: the records
/// back in their own table, without the tables and columns that format
/// did not have yet and their migration records, `user_version` set.
/// Rows and the MAC are left as they are.
func setBackSchema(_ db: Database, toFormat format: Int) throws {
    try db.execute(
        sql: """
            CREATE TABLE itemRecord (
                itemId BLOB PRIMARY KEY REFERENCES item(itemId) ON DELETE CASCADE,
                record BLOB NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO itemRecord SELECT itemId, record FROM item WHERE record IS NOT NULL;
            ALTER TABLE item DROP COLUMN record;
            DROP INDEX item_nameHash;
            CREATE INDEX item_nameHash ON item(nameHash);
            DELETE FROM grdb_migrations WHERE identifier IN ('v6-item-terms', 'v7-bound-wrap', 'v8-signed-writes', 'v8-identity-unlock', 'v8-local-only-index');
            DROP TABLE memberPublisher;
            DROP TABLE replicaBinding;
            DROP TABLE identityUnlock;
            DROP INDEX item_localOnly;
            """)
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
