import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// The heart of an unlocked vault: its file, its keys in guarded memory,
/// and the operations every concern builds on. Each concern of the vault
/// is a component beside it (``VaultComponent``): items, replica identity,
/// replication, conflicts, requirements, audit, interchange, key rotation,
/// git credentials. ``Vault`` is the public façade over them
/// (docs/architecture.md). Sessions (Sessions/) have a folder of their own
/// but no component: a session is found and opened before there is a
/// vault to hold, from the ``VaultFile``.
///
/// What is here and nowhere else:
/// - the single write path, ``write(_:)``, which hands each transaction the
///   vault MAC accumulator, and ``save(_:row:old:new:now:mac:shown:)``
///   which writes an item's row, record and versions through it; the
///   format upgrade of integrity data and ``verify()``
///   (Core/VaultCore+Integrity.swift);
/// - sealing and opening field versions (``seal(_:item:register:dot:vector:at:tombstone:)``,
///   ``open(_:item:register:)``) and item records (Core/ItemRecord.swift);
/// - turning an item's state into an ``Item`` (``decode(_:row:)``) and
///   its clear columns (``derivedRow(for:policy:createdAt:updatedAt:)``);
/// - finding an item by name or id (``resolve(_:_:)``).
///
/// The dot a write takes is replica identity's (``ReplicaIdentity``): the
/// file must still own its replica id before it writes.
///
/// Thread-safe: SQLite access is serialized by the store and the keys
/// never change after unlock, until ``VaultKeys/lock(because:)`` wipes
/// them (every write holds them through ``VaultKeys/use(_:)``, so none
/// straddles the wipe).
package final class VaultCore: Sendable {
    package let file: VaultFile
    package let keys: VaultKeys
    /// The session's listing cache, when unlocked through a session.
    let listingCache: ListingCache?
    /// The items the current write transaction sealed records for.
    let listingWrites = ListingWriteLog()
    /// The last file state whose vault MAC was verified (in the session's
    /// folder too when unlocked through a session).
    let integrityStamp: IntegrityStamp
    /// The member identity this vault was unlocked with (`--identity`),
    /// which signs its bundles when the vault keeps no identity of its own.
    let unlockedIdentity = IdentityBox()
    /// The shell session this vault was unlocked through, if any.
    let session = SessionLinkBox()

    /// `rebuildIntegrity`: a vault without integrity data gets it built
    /// (``ensureIntegrity(rebuild:)``); only a passphrase unlock whose key
    /// opened under the legacy wrapping may ask for it.
    init(file: VaultFile, master: SecretBytes, listingCache: ListingCache? = nil, rebuildIntegrity: Bool = false) throws {
        self.file = file
        self.keys = VaultKeys(master: master)
        self.listingCache = listingCache
        self.integrityStamp = IntegrityStamp(path: listingCache.map { String($0.path.dropLast(ListingCache.suffix.count)) + IntegrityStamp.suffix })
        try ensureIntegrity(rebuild: rebuildIntegrity)
    }

    /// A core under `master` whose integrity is not checked: the target of
    /// a rekey, used inside the rekey's transaction to seal what the new
    /// key will read (Rekey/KeyRotation.swift).
    init(file: VaultFile, rekeyTarget master: SecretBytes) {
        self.file = file
        self.keys = VaultKeys(master: master)
        self.listingCache = nil
        self.integrityStamp = IntegrityStamp(path: nil)
    }

    package var path: String { file.path }
    package var vaultID: VaultID { file.header.vaultID }
    package var store: VaultStore { file.store }

    /// Finds the live item called `name`, or addressed as `id:HEX` (a
    /// unique prefix of its id), inside a write (or a GRDB read).
    package func resolve(_ db: StoreConnection, _ name: String) throws -> ItemID { try resolve(ReadConnection(db), name) }

    /// The same in any read (the read verbs' direct one: ``VaultStore/readDirect(_:)``).
    package func resolve(_ db: ReadConnection, _ name: String) throws -> ItemID {
        if name.hasPrefix("id:") {
            let prefix = name.dropFirst(3).lowercased()
            guard prefix.count >= 4 else {
                throw CofferError(.usage, "an id prefix needs at least 4 hex digits")
            }
            // A whole id (as the Secret Service's object paths hold): one
            // row by its key, not a scan of every item's row.
            if prefix.count == 32, let id = ItemID(hex: String(prefix)) {
                guard let row = try Queries.cachedItemRow(db, id: id), !row.isDeleted else {
                    throw CofferError(.itemNotFound, "no item with id \(prefix)", remedy: .init(.listItems, "list the vault's items"))
                }
                return row.id
            }
            let matches = try Queries.itemRows(db).filter { $0.id.hex.hasPrefix(prefix) }
            guard matches.count == 1 else {
                if matches.isEmpty { throw CofferError(.itemNotFound, "no item with id \(prefix)", remedy: .init(.listItems, "list the vault's items")) }
                throw CofferError(.ambiguousName, "id prefix \(prefix) matches \(matches.count) items", remedy: .init(.giveMoreIDDigits, "give more digits"))
            }
            return matches[0].id
        }
        let normalized = try Vault.normalizeName(name)
        let ids = try Queries.itemIDs(db, nameHash: KeyHierarchy.nameHash(normalized, nameKey: keys.nameIndex))
        // The name index is a clear column: an item found through it is
        // served only if its authenticated record bears the name asked for
        // (two swapped hashes must not serve one item's secret for the
        // other's name).
        for id in ids {
            let record = try openRecord(try Queries.itemRecord(db, id: id), item: id, withVersions: false)
            guard record.name == normalized, !record.isDeleted else {
                throw StoreError.damaged("the name index points '\(normalized)' at another item (id \(id.hex.prefix(8)))")
            }
        }
        switch ids.count {
        case 0:
            // A wiped name key finds nothing: say why.
            if let locked = keys.lockedError { throw locked }
            // No "did you mean" here: lookups that expect a miss (an
            // existence check, a reference's NAME/FIELD split) go through
            // this too. ``suggestion(forMissing:)`` is for the error a
            // person reads.
            var missing = CofferError(.itemNotFound, "no item named '\(normalized)'", remedy: .init(.listItems, "list the vault's items"))
            missing.missingName = normalized
            throw missing
        case 1:
            return ids[0]
        default:
            let list = ids.map { "id:" + $0.hex.prefix(8) }.sorted().joined(separator: ", ")
            throw CofferError(
                .ambiguousName, "\(ids.count) items are named '\(normalized)' (created concurrently on different replicas)",
                remedy: .init(.addressByID, "address one as \(list), then rename or remove it", item: normalized, name: list))
        }
    }

    // MARK: Encoding

    /// `sealer`: a bulk write's ``AEAD/BatchSealer`` under the item key
    /// (the same box, its nonce drawn with 63 others).
    func seal(
        _ payload: FieldPayload, item: ItemID, register: RegisterID, dot: Dot, vector: VersionVector, at time: Int64, tombstone: Bool,
        sealer: AEAD.BatchSealer? = nil
    ) -> FieldVersion {
        let ad = FieldVersion.associatedData(
            vault: vaultID, item: item, register: register, dot: dot, vector: vector, writtenAt: time,
            isTombstone: tombstone)
        let plain = Vault.padsPayload(payload, register: register) ? payload.paddedEncoding : payload.encoded
        return FieldVersion(
            dot: dot, vector: vector, writtenAt: time, isTombstone: tombstone,
            payload: sealer.map { $0.seal(plain, associatedData: ad) } ?? AEAD.seal(plain, key: keys.item, associatedData: ad))
    }

    func open(_ v: FieldVersion, item: ItemID, register: RegisterID) throws -> FieldPayload {
        let ad = FieldVersion.associatedData(
            vault: vaultID, item: item, register: register, dot: v.dot, vector: v.vector, writtenAt: v.writtenAt,
            isTombstone: v.isTombstone)
        var plain: [UInt8]
        do { plain = try AEAD.open(v.payload, key: keys.item, associatedData: ad) } catch {
            if let locked = keys.lockedError { throw locked }
            throw CofferError(
                .badData, "an item's data failed authentication (it was modified or moved)",
                hint: "restore the vault from a backup or re-import a bundle")
        }
        // The decrypted payload is wiped once decoded (the value lives on
        // in the returned payload and the Strings made from it, which
        // Swift cannot wipe: docs/threat-model.md, "Memory").
        defer { plain.withUnsafeMutableBytes { if let p = $0.baseAddress { Sodium.memzero(p, $0.count) } } }
        return try FieldPayload(decoding: plain)
    }

    package func registerID(field: String, item: ItemID) -> RegisterID {
        let nfc = field.utf8.allSatisfy({ $0 < 0x80 }) ? field : field.precomposedStringWithCanonicalMapping
        return KeyHierarchy.registerID(field: nfc, item: item, fieldIDKey: keys.fieldID)
    }

    /// Decrypts an item's shown values and its conflicts.
    func decode(_ state: ItemState, row: ItemRow) throws -> Item {
        var name = ""
        var type = ItemType.custom
        var tags: [String] = []
        var source: String?
        var expires: Day?
        var env: [String: String] = [:]
        var allowedEnv: Set<String> = []
        var fields: [Field] = []
        var conflicts: [FieldConflict] = []
        var last: FieldVersion?
        for (rid, versions) in state.registers {
            guard let shown = Register.shown(versions) else { continue }
            if let l = last, (l.writtenAt, l.dot.counter) >= (shown.writtenAt, shown.dot.counter) {} else { last = shown }
            let payload = try open(shown, item: state.id, register: rid)
            if versions.count > 1 && rid != .deleted {
                var sides: [ConflictSide] = []
                for (i, v) in versions.enumerated() {
                    let p = v.dot == shown.dot ? payload : try open(v, item: state.id, register: rid)
                    sides.append(
                        ConflictSide(
                            number: i + 1, value: v.isTombstone ? nil : p.text, isShown: v.dot == shown.dot,
                            writtenAt: Clock.date(v.writtenAt), replica: v.dot.replica, dot: v.dot))
                }
                conflicts.append(FieldConflict(field: payload.name, isSecret: payload.isSecret, sides: sides))
            }
            if shown.isTombstone { continue }
            switch rid {
            case .name: name = payload.text
            case .type: type = ItemType(rawValue: payload.text) ?? .custom
            case .tags: tags = payload.text.split(separator: "\n").map(String.init)
            case .source: source = payload.text
            case .expires: expires = Day(payload.text)
            case .env:
                for line in payload.text.split(separator: "\n") {
                    let kv = line.split(separator: "=", maxSplits: 1)
                    // A mapping can arrive from another replica: keep only
                    // values that are variable names (or "-"), so nothing
                    // else can reach `coffer env --format shell`.
                    if kv.count == 2, EnvNaming.isValidOverride(String(kv[1])) { env[String(kv[0])] = String(kv[1]) }
                    // `+VAR`: a guarded name the user allowed (no '=', so
                    // a coffer that predates it ignores the line).
                    if kv.count == 1, let v = EnvNaming.allowedName(inLine: line) { allowedEnv.insert(v) }
                }
            case .deleted: break
            default:
                if rid.isMetadata { continue }
                fields.append(Field(name: payload.name, bytes: payload.value, isSecret: payload.isSecret, isFile: payload.isFile))
            }
        }
        let declared = type.fields.map(\.name)
        fields.sort { a, b in
            let ia = declared.firstIndex(of: a.name) ?? Int.max
            let ib = declared.firstIndex(of: b.name) ?? Int.max
            return ia != ib ? ia < ib : a.name < b.name
        }
        conflicts.sort { $0.field < $1.field }
        return Item(
            id: state.id, name: name, type: type, fields: fields, tags: tags, source: source, expires: expires,
            policy: row.policy, env: env, createdAt: Clock.date(row.createdAt), updatedAt: Clock.date(row.updatedAt),
            vector: state.vector, conflicts: conflicts, hasDeleteConflict: state.hasDeleteConflict,
            lastWrittenBy: last?.dot.replica, allowedEnvNames: allowedEnv)
    }

    /// The clear-text columns derived from an item's state.
    package func derivedRow(for state: ItemState, policy: SyncPolicy, createdAt: Int64, updatedAt: Int64) throws -> ItemRow {
        var nameHash: [UInt8]?
        if let shown = Register.shown(state.registers[.name] ?? []), !shown.isTombstone {
            let name = try open(shown, item: state.id, register: .name).text
            nameHash = KeyHierarchy.nameHash(name, nameKey: keys.nameIndex)
        }
        return ItemRow(
            id: state.id, policy: policy, nameHash: nameHash, isDeleted: state.isDeleted,
            hasConflict: !state.conflictedRegisters.isEmpty || state.hasDeleteConflict,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    /// A pending local write to one register.
    package struct Change {
        package var register: RegisterID
        package var payload: FieldPayload
        package var tombstone: Bool

        package init(register: RegisterID, payload: FieldPayload, tombstone: Bool) {
            self.register = register
            self.payload = payload
            self.tombstone = tombstone
        }
    }

    /// Applies `changes` to `state` as one local write stamped with `dot`.
    /// `sealer`: see ``seal(_:item:register:dot:vector:at:tombstone:sealer:)``.
    package func apply(_ changes: [Change], to state: inout ItemState, dot: Dot, at time: Int64, sealer: AEAD.BatchSealer? = nil) {
        for c in changes {
            let current = state.registers[c.register] ?? []
            let vector = Register.vectorForWrite(over: current, dot: dot)
            state.registers[c.register] = [
                seal(c.payload, item: state.id, register: c.register, dot: dot, vector: vector, at: time, tombstone: c.tombstone, sealer: sealer)
            ]
        }
    }

}

/// The master key and the sub-keys derived from it, until the vault is
/// locked: ``lock(because:)`` waits for the key users in progress and
/// wipes every key (Core/KeyLock.swift).
package final class VaultKeys: Sendable {
    /// Who is using the keys, and whether they are wiped.
    let lockState = KeyLock()
    let master: SecretBytes
    package let item: SecretBytes
    package let nameIndex: SecretBytes
    package let fieldID: SecretBytes
    /// Seals item records (docs/key-hierarchy.md).
    package let record: SecretBytes
    /// Keys the vault MAC.
    package let mac: SecretBytes

    init(master: SecretBytes) {
        self.master = master
        item = KeyHierarchy.subKey(.itemPayload, of: master)
        nameIndex = KeyHierarchy.subKey(.nameIndex, of: master)
        fieldID = KeyHierarchy.subKey(.fieldID, of: master)
        record = KeyHierarchy.subKey(.itemRecord, of: master)
        mac = KeyHierarchy.subKey(.vaultMAC, of: master)
    }

    /// Seals the session's listing cache (derived when first needed).
    var listing: SecretBytes { KeyHierarchy.subKey(.listingCache, of: master) }

    var bundle: SecretBytes { KeyHierarchy.subKey(.bundle, of: master) }

    /// Authenticates the integrity stamp (``IntegrityStamp``).
    var integrityStamp: SecretBytes { KeyHierarchy.subKey(.integrityStamp, of: master) }
}

/// The ids of the items whose records one write transaction sealed
/// (``VaultCore/sealRecord(state:row:shown:sealer:)``), gathered between
/// ``begin()`` and ``end()`` for the listing cache's delta; past
/// ``ListingCache/maxDeltaItems`` it stops gathering and says so.
final class ListingWriteLog: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: Set<ItemID>?
    private var overflowed = false

    func begin() {
        lock.withLock {
            ids = []
            overflowed = false
        }
    }

    func touch(_ id: ItemID) {
        lock.withLock {
            guard var gathered = ids, !overflowed else { return }
            ids = nil // the one reference left: insert in place
            gathered.insert(id)
            if gathered.count > ListingCache.maxDeltaItems { overflowed = true } else { ids = gathered }
        }
    }

    /// The gathered ids (nil when there were too many, or no write was
    /// gathering), and stops gathering.
    func end() -> Set<ItemID>? {
        lock.withLock {
            defer { ids = nil }
            return overflowed ? nil : ids
        }
    }
}

/// A member identity set once after unlock (``VaultCore/unlockedIdentity``):
/// the identity itself (`--identity FILE`), or, for a shell session, the
/// way to read the session's identity file when a command first needs it
/// (`get` never does).
final class IdentityBox: @unchecked Sendable {
    private let lock = NSLock()
    private var identity: MemberIdentity?
    private var loader: (() throws(CofferError) -> MemberIdentity?)?

    func set(_ i: MemberIdentity) { lock.withLock { identity = i } }
    func setLoader(_ l: @escaping () throws(CofferError) -> MemberIdentity?) { lock.withLock { loader = l } }

    /// The identity, read through the loader the first time.
    func load() throws(CofferError) -> MemberIdentity? {
        let (held, pending) = lock.withLock { (identity, loader) }
        if let held { return held }
        guard let pending else { return nil }
        let loaded = try pending()
        lock.withLock {
            identity = loaded
            loader = nil
        }
        return loaded
    }

    /// The same identity (or loader) given to another vault of the file
    /// (the vault a key adoption returns).
    func copy(to other: IdentityBox) {
        let (held, pending) = lock.withLock { (identity, loader) }
        if let held { other.set(held) } else if let pending { other.setLoader(pending) }
    }
}

/// The shell session a vault was unlocked through, kept so that a key
/// adoption carries this session over to the new key (docs/sessions.md).
struct SessionLink: Sendable {
    let directory: SessionDirectory
    let id: [UInt8]
    let secret: SecretBytes
}

/// ``SessionLink`` set once after a session unlock.
final class SessionLinkBox: @unchecked Sendable {
    private let lock = NSLock()
    private var link: SessionLink?
    func set(_ l: SessionLink) { lock.withLock { link = l } }
    var value: SessionLink? { lock.withLock { link } }
}
