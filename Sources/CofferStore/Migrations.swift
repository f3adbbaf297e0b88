import GRDB

/// Schema migrations. Each migration, once shipped, is never modified:
/// a format change is a new migration and a new ``VaultStore/formatVersion``.
/// The schema these produce must equal Schemas/vault.sql (a test checks).
enum Migrations {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: v1)
            try db.execute(sql: "PRAGMA user_version = 1")
        }
        m.registerMigration("v2-integrity") { db in
            try db.execute(sql: v2Integrity)
            try db.execute(sql: "PRAGMA user_version = 2")
        }
        // Part of format 3 (its tables were added beside the keys' one in
        // the same release; format 3 is reached by the migration after it).
        m.registerMigration("sync-replica-bookkeeping") { db in
            try db.execute(sql: syncReplicaBookkeeping)
            // An existing vault is taken to have published every write
            // it made (the safe assumption for restore detection).
            try db.execute(sql: "INSERT OR IGNORE INTO localExport (singleton, replicaId, counter) SELECT 1, replicaId, counter FROM localReplica")
        }
        m.registerMigration("v3-keys-wrapping") { db in
            try db.execute(sql: v3KeysWrapping)
            try db.execute(sql: "PRAGMA user_version = 3")
        }
        m.registerMigration("v4-sync-bookkeeping-mac") { db in
            try db.execute(sql: v4SyncBookkeepingMAC)
            try db.execute(sql: "PRAGMA user_version = 4")
        }
        m.registerMigration("v5-key-epoch") { db in
            try db.execute(sql: v5KeyEpoch)
            try db.execute(sql: "PRAGMA user_version = 5")
        }
        m.registerMigration("v6-item-terms") { db in
            try db.execute(sql: v6ItemTerms)
            try db.execute(sql: "PRAGMA user_version = 6")
        }
        // Format 7 binds the wrapped master key to "this vault has
        // integrity data" (docs/key-hierarchy.md). No schema change: the
        // number only stops builds that do not know the new wrapping from
        // opening the file; the re-wrap itself needs the passphrase and is
        // made at the next unlock with it (`VaultFile.unlock`).
        m.registerMigration("v7-bound-wrap") { db in
            try db.execute(sql: "PRAGMA user_version = 7")
        }
        // Format 8 is three migrations, written in one release: signed
        // writes, identity unlock, and the index of local-only items.
        m.registerMigration("v8-signed-writes") { db in
            try db.execute(sql: v8SignedWrites)
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        m.registerMigration("v8-identity-unlock") { db in
            try db.execute(sql: v8IdentityUnlock)
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        m.registerMigration("v8-local-only-index") { db in
            try db.execute(sql: v8LocalOnlyIndex)
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        return m
    }

    /// Format version 8 (signed writes, docs/sharing.md): what this replica
    /// knows of each member who published signed bundles, and which member
    /// each replica id is bound to. Empty tables add no MAC term, so an
    /// older vault needs no data migration.
    static let v8SignedWrites = """
        CREATE TABLE memberPublisher (
            signKey BLOB PRIMARY KEY CHECK (length(signKey) = 32),
            counter INTEGER NOT NULL,
            summary BLOB NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE replicaBinding (
            replicaId BLOB PRIMARY KEY CHECK (length(replicaId) = 16),
            signKey BLOB NOT NULL CHECK (length(signKey) = 32)
        ) WITHOUT ROWID;
        """

    /// Format version 8: the master key sealed to each member identity
    /// allowed to unlock this file (`coffer clone --identity`,
    /// docs/key-hierarchy.md, "Unlocking with a member identity"). No rows:
    /// only the passphrase unlocks, as before, so no data migration.
    static let v8IdentityUnlock = """
        CREATE TABLE identityUnlock (
            identity BLOB PRIMARY KEY CHECK (length(identity) = 65),
            sealedKey BLOB NOT NULL CHECK (length(sealedKey) = 142)
        ) WITHOUT ROWID;
        """

    /// Format version 8: the partial index of local-only items. Every
    /// `sync` (even one with nothing new, before the key is known) asks for
    /// them to compute what this replica may claim; without it that read
    /// every item row (20–28 ms at 100,000 items).
    static let v8LocalOnlyIndex = """
        CREATE INDEX item_localOnly ON item(policy) WHERE policy = 'local-only';
        """

    /// Format version 6: each item's sealed record moves into its row (one
    /// B-tree insert per new item instead of two), and the vault MAC takes
    /// one term per item with its current versions in it
    /// (docs/key-hierarchy.md, "Vault MAC"). The records are moved as they
    /// are (a record a key holder would find changed stays changed); the
    /// first unlock folds the stored MAC to the new terms
    /// (`Vault.ensureIntegrity`). Records of rows without an item (never
    /// written by coffer, never covered) are dropped with the table. The
    /// name index takes the deleted flag too: a name removed and added
    /// again many times leaves one deleted row per removal under its hash,
    /// and a lookup of the live item no longer reads each of those rows
    /// (now larger, with their records).
    static let v6ItemTerms = """
        ALTER TABLE item ADD COLUMN record BLOB;
        UPDATE item SET record = (SELECT record FROM itemRecord WHERE itemRecord.itemId = item.itemId);
        DROP TABLE itemRecord;
        DROP INDEX item_nameHash;
        CREATE INDEX item_nameHash ON item(nameHash, isDeleted);
        """

    /// Format version 5 ("rekey"): the vault's key epoch and its key check
    /// (docs/key-hierarchy.md §Master-key rotation). No row means epoch 0,
    /// the key made by `init`, so a format-4 vault needs no data migration.
    static let v5KeyEpoch = """
        CREATE TABLE keyEpoch (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            epoch BLOB NOT NULL,
            keyCheck BLOB NOT NULL CHECK (length(keyCheck) = 32)
        );
        """

    /// Format version 2: per-item integrity records and the vault MAC
    /// (docs/key-hierarchy.md). The migration only creates the tables: it
    /// has no key. The first unlock of a format-1 vault fills them
    /// (`Vault.ensureIntegrity`) and sets the header's formatVersion to 2.
    static let v2Integrity = """
        CREATE TABLE itemRecord (
            itemId BLOB PRIMARY KEY REFERENCES item(itemId) ON DELETE CASCADE,
            record BLOB NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE vaultIntegrity (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            mac BLOB NOT NULL CHECK (length(mac) = 32)
        );
        """

    /// Format version 3 ("keys"): the version of the passphrase wrapping
    /// (docs/sync.md §Passphrase changes). No row means the initial
    /// wrapping, so a format-2 vault needs no data migration.
    static let v3KeysWrapping = """
        CREATE TABLE keyWrapping (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            version BLOB NOT NULL
        );
        """

    /// Format version 4: the vault MAC also covers sync's bookkeeping
    /// (`localExport`, `localOnlyWriter`; terms "E" and "P") and keeps one
    /// partial MAC per area beside the whole one, so that `coffer verify`
    /// names what was changed (docs/key-hierarchy.md). The migration only
    /// adds the column: it has no key. The first unlock folds the new terms
    /// into the MAC, fills the column and sets the header's formatVersion
    /// to 4 (`Vault.ensureIntegrity`).
    static let v4SyncBookkeepingMAC = """
        ALTER TABLE vaultIntegrity ADD COLUMN areaMacs BLOB CHECK (areaMacs IS NULL OR length(areaMacs) = 224);
        """

    /// Issue 14 (docs/sync.md, "Restored vault files" and "Local-only
    /// items"): the highest own counter this file has put in a bundle, and
    /// the private writer id of each local-only item.
    static let syncReplicaBookkeeping = """
        CREATE TABLE localExport (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            replicaId BLOB NOT NULL CHECK (length(replicaId) = 16),
            counter INTEGER NOT NULL CHECK (counter >= 0)
        );

        CREATE TABLE localOnlyWriter (
            itemId BLOB PRIMARY KEY CHECK (length(itemId) = 16),
            replicaId BLOB NOT NULL CHECK (length(replicaId) = 16)
        ) WITHOUT ROWID;
        """

    /// Format version 1 (Schemas/vault.sql).
    static let v1 = """
        CREATE TABLE vault (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            formatVersion INTEGER NOT NULL,
            vaultId BLOB NOT NULL CHECK (length(vaultId) = 16),
            kdfAlgorithm TEXT NOT NULL CHECK (kdfAlgorithm = 'argon2id'),
            kdfMemoryKiB INTEGER NOT NULL CHECK (kdfMemoryKiB > 0),
            kdfIterations INTEGER NOT NULL CHECK (kdfIterations > 0),
            kdfParallelism INTEGER NOT NULL CHECK (kdfParallelism > 0),
            kdfSalt BLOB NOT NULL CHECK (length(kdfSalt) = 16),
            wrappedMasterKey BLOB NOT NULL CHECK (length(wrappedMasterKey) = 72),
            createdAt INTEGER NOT NULL
        );

        CREATE TABLE localReplica (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            replicaId BLOB NOT NULL CHECK (length(replicaId) = 16),
            counter INTEGER NOT NULL CHECK (counter >= 0),
            boundHost TEXT,
            boundInode INTEGER
        );

        CREATE TABLE replica (
            replicaId BLOB PRIMARY KEY CHECK (length(replicaId) = 16),
            counter INTEGER NOT NULL CHECK (counter >= 0),
            lastImportAt INTEGER
        ) WITHOUT ROWID;

        CREATE TABLE item (
            itemId BLOB PRIMARY KEY CHECK (length(itemId) = 16),
            policy TEXT NOT NULL DEFAULT 'sync' CHECK (policy IN ('sync', 'local-only')),
            nameHash BLOB,
            isDeleted INTEGER NOT NULL DEFAULT 0,
            hasConflict INTEGER NOT NULL DEFAULT 0,
            createdAt INTEGER NOT NULL,
            updatedAt INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE INDEX item_nameHash ON item(nameHash);

        CREATE TABLE fieldVersion (
            itemId BLOB NOT NULL REFERENCES item(itemId) ON DELETE CASCADE,
            registerId BLOB NOT NULL CHECK (length(registerId) = 16),
            replicaId BLOB NOT NULL CHECK (length(replicaId) = 16),
            counter INTEGER NOT NULL CHECK (counter > 0),
            vector BLOB NOT NULL,
            writtenAt INTEGER NOT NULL,
            isTombstone INTEGER NOT NULL CHECK (isTombstone IN (0, 1)),
            payload BLOB NOT NULL,
            PRIMARY KEY (itemId, registerId, replicaId, counter)
        ) WITHOUT ROWID;

        CREATE INDEX fieldVersion_dot ON fieldVersion(replicaId, counter);

        CREATE TABLE fieldHistory (
            itemId BLOB NOT NULL REFERENCES item(itemId) ON DELETE CASCADE,
            registerId BLOB NOT NULL,
            replicaId BLOB NOT NULL,
            counter INTEGER NOT NULL,
            vector BLOB NOT NULL,
            writtenAt INTEGER NOT NULL,
            isTombstone INTEGER NOT NULL,
            payload BLOB NOT NULL,
            supersededAt INTEGER NOT NULL,
            PRIMARY KEY (itemId, registerId, replicaId, counter)
        ) WITHOUT ROWID;
        """
}
