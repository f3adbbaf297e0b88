-- Coffer vault schema, format version 8 (format 5 added keyEpoch; format 6
-- moved each item's record into its row and changed the vault MAC's terms;
-- format 7 changed no table: the master key in vault.wrappedMasterKey is
-- wrapped with the coffer-wrap-v3 associated data, which says that the vault
-- has integrity data, and formatVersion 7 says so: docs/key-hierarchy.md; format 8
-- added memberPublisher, replicaBinding, identityUnlock and item_localOnly).
--
-- This file is the normative schema of a Coffer vault file. The migrations
-- in Sources/CofferStore/Migrations.swift must produce exactly this schema;
-- a test compares the two. Change it only together with a new migration
-- and a new format version (docs/architecture.md, "Formats are promises").
--
-- Only identifiers, version vectors, timestamps and flags needed for sync
-- are stored in the clear. Every name, field, tag and note is inside an
-- XChaCha20-Poly1305 payload (docs/key-hierarchy.md).

-- One row: the vault's identity, its KDF parameters and the wrapped master key.
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

-- One row: this file's replica id and its write counter. boundHost and
-- boundInode record where the replica id was issued, so that a vault file
-- copied to another machine takes a new replica id instead of reusing it.
CREATE TABLE localReplica (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    replicaId BLOB NOT NULL CHECK (length(replicaId) = 16),
    counter INTEGER NOT NULL CHECK (counter >= 0),
    boundHost TEXT,
    boundInode INTEGER
);

-- Every replica this vault has seen writes from (itself included) and the
-- highest counter seen from each: together, the vault's summary vector.
CREATE TABLE replica (
    replicaId BLOB PRIMARY KEY CHECK (length(replicaId) = 16),
    counter INTEGER NOT NULL CHECK (counter >= 0),
    lastImportAt INTEGER
) WITHOUT ROWID;

-- One row per item. nameHash is a keyed BLAKE2b of the shown name (the
-- name itself is encrypted); isDeleted and hasConflict are derived from
-- the item's field versions after every write or merge.
--
-- Format 6 added `record` (by ALTER TABLE, hence the comma's place): the
-- item's sealed integrity record (docs/key-hierarchy.md, "Item records"):
-- XChaCha20-Poly1305 under the record key, bound to the vault id and item
-- id, holding what a listing shows and a digest of the dot and tag of
-- every current version. Checked on every read of the item. Formats 2 to
-- 5 kept it in a table of its own, itemRecord.
CREATE TABLE item (
    itemId BLOB PRIMARY KEY CHECK (length(itemId) = 16),
    policy TEXT NOT NULL DEFAULT 'sync' CHECK (policy IN ('sync', 'local-only')),
    nameHash BLOB,
    isDeleted INTEGER NOT NULL DEFAULT 0,
    hasConflict INTEGER NOT NULL DEFAULT 0,
    createdAt INTEGER NOT NULL,
    updatedAt INTEGER NOT NULL
, record BLOB) WITHOUT ROWID;

-- Format 6 added isDeleted to the index: a lookup of a live name seeks
-- past the deleted rows that carry the same hash.
CREATE INDEX item_nameHash ON item(nameHash, isDeleted);

-- The current versions of every register (field) of every item. Several
-- rows for one (itemId, registerId) are concurrent versions: a conflict.
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

-- Versions that were superseded, kept for `coffer history`. Local to this
-- vault file: history does not travel in bundles.
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

-- Format 2. The vault MAC: XOR of keyed BLAKE2b terms, one per covered
-- row (header, local replica, replicas, items with their records, current
-- and history versions), updated in the transaction of every write. Since
-- format 6 an item's term holds its current versions (no term per
-- version); the "versions" area then only gets terms of versions of no
-- item, which coffer never writes, and stays zero.
--
-- Format 4 added `areaMacs` (by ALTER TABLE, hence the comma's place): the
-- same XOR per area of terms (header, replicas, items, versions, history,
-- export mark, private writers; 7 x 32 bytes), so that `coffer verify` names what was
-- changed. The MAC also covers localExport ("E") and localOnlyWriter ("P").
CREATE TABLE vaultIntegrity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    mac BLOB NOT NULL CHECK (length(mac) = 32)
, areaMacs BLOB CHECK (areaMacs IS NULL OR length(areaMacs) = 224));

-- One row: the highest counter of this file's replica id that this file
-- has put in a bundle (export or sync). A bundle that has seen more of
-- this replica id was written by another file: a restored backup or a
-- copy (docs/sync.md, "Restored vault files").
CREATE TABLE localExport (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    replicaId BLOB NOT NULL CHECK (length(replicaId) = 16),
    counter INTEGER NOT NULL CHECK (counter >= 0)
);

-- The private writer id of each local-only item: writes to it take dots
-- of this id, which no bundle claims until the item syncs again
-- (docs/sync.md, "Local-only items").
CREATE TABLE localOnlyWriter (
    itemId BLOB PRIMARY KEY CHECK (length(itemId) = 16),
    replicaId BLOB NOT NULL CHECK (length(replicaId) = 16)
) WITHOUT ROWID;

-- Format 3. The version of the passphrase wrapping (docs/sync.md,
-- "Passphrase changes"): vector || changed-by replica id || i64 changed at,
-- as in a format-2 bundle header. No row: the initial wrapping of `init`.
-- Covered by the vault MAC (term "W").
CREATE TABLE keyWrapping (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version BLOB NOT NULL
);

-- Format 5. The key epoch (docs/key-hierarchy.md, "Master-key rotation"):
-- u64 number || rekeyed-by replica id || i64 rekeyed at, as in a format-3
-- bundle header, and the key check BLAKE2b-256(key = subkey(18),
-- "coffer-key-check-v1" || vault id || epoch), which tells a session's
-- master key of an older epoch from the current one. No row: epoch 0, the
-- key made by `init`. Covered by the vault MAC (term "K").
CREATE TABLE keyEpoch (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    epoch BLOB NOT NULL,
    keyCheck BLOB NOT NULL CHECK (length(keyCheck) = 32)
);

-- Format 8. Signed writes (docs/sharing.md, "Signed writes"): for each
-- member key (Ed25519, 32 bytes) that published a signed bundle this
-- replica accepted (or, for this replica's own identity, that it
-- published), the highest publication counter and the union of the
-- accepted bundles' summaries (an encoded version vector). Covered by the
-- vault MAC (term "M").
CREATE TABLE memberPublisher (
    signKey BLOB PRIMARY KEY CHECK (length(signKey) = 32),
    counter INTEGER NOT NULL,
    summary BLOB NOT NULL
) WITHOUT ROWID;

-- Format 8. Each replica id's member: the key that signed the first
-- accepted bundle written by that replica. Covered by the vault MAC
-- (term "B").
CREATE TABLE replicaBinding (
    replicaId BLOB PRIMARY KEY CHECK (length(replicaId) = 16),
    signKey BLOB NOT NULL CHECK (length(signKey) = 32)
) WITHOUT ROWID;

-- Format 8. This replica's master key of the current key epoch sealed to
-- each member identity allowed to unlock this file (`coffer clone
-- --identity`, docs/key-hierarchy.md, "Unlocking with a member identity"):
-- the public identity's 65-byte payload (version 1 || X25519 || Ed25519)
-- and crypto_box_seal("coffer-seal-v1" || vault id || key epoch || master
-- key) to its X25519 key, as a bundle's sealed keys. No rows: only the
-- passphrase unlocks. Covered by the vault MAC (term "U").
CREATE TABLE identityUnlock (
    identity BLOB PRIMARY KEY CHECK (length(identity) = 65),
    sealedKey BLOB NOT NULL CHECK (length(sealedKey) = 142)
) WITHOUT ROWID;

-- Format 8. The local-only items, found by every `sync` (even one with
-- nothing new) without reading every item row.
CREATE INDEX item_localOnly ON item(policy) WHERE policy = 'local-only';
