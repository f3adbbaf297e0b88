import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import GRDB

/// An unlocked vault: the keys are in guarded memory and every item
/// operation is available. Thread-safe: SQLite access is serialized by
/// the store and the keys never change after unlock.
public final class Vault: Sendable {
    public let file: VaultFile
    package let keys: VaultKeys
    /// The session's listing cache, when unlocked through a session.
    let listingCache: ListingCache?

    /// `rebuildIntegrity`: a vault without integrity data gets it built
    /// (``ensureIntegrity(rebuild:)``); only a passphrase unlock whose key
    /// opened under the legacy wrapping may ask for it.
    init(file: VaultFile, master: SecretBytes, listingCache: ListingCache? = nil, rebuildIntegrity: Bool = false) throws {
        self.file = file
        self.keys = VaultKeys(master: master)
        self.listingCache = listingCache
        try ensureIntegrity(rebuild: rebuildIntegrity)
    }

    /// A vault object under `master` whose integrity is not checked: the
    /// target of a rekey, used inside the rekey's transaction to seal what
    /// the new key will read (Vault+Rekey.swift).
    init(file: VaultFile, rekeyTarget master: SecretBytes) {
        self.file = file
        self.keys = VaultKeys(master: master)
        self.listingCache = nil
    }

    public var path: String { file.path }
    public var vaultID: VaultID { file.header.vaultID }
    package var store: VaultStore { file.store }

    /// The master key, for code of this package that must hand it on (a
    /// shell session, re-wrapping). Not public: an application never needs
    /// the key itself (sessions are reused with ``Coffer/Unlock/session``).
    package var masterKey: SecretBytes { keys.master }

    // MARK: Names

    /// Checks and normalizes an item name: a `/`-separated path of
    /// non-empty components, no control characters, Unicode NFC.
    public static func normalizeName(_ raw: String) throws(CofferError) -> String {
        let name = raw.precomposedStringWithCanonicalMapping
        guard !name.isEmpty else { throw CofferError(.usage, "an item name cannot be empty") }
        guard !name.hasPrefix("/"), !name.hasSuffix("/"), !name.contains("//") else {
            throw CofferError(.usage, "invalid item name '\(name)': a name is a path like work/openai, without empty parts or leading or trailing '/'")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw CofferError(.usage, "invalid item name: control characters are not allowed")
        }
        guard !name.hasPrefix("id:") else {
            throw CofferError(.usage, "invalid item name '\(name)': names starting with 'id:' are reserved for addressing items by id")
        }
        guard name.utf8.count <= 1024 else { throw CofferError(.usage, "item name is longer than 1024 bytes") }
        return name
    }

    /// A field name in Unicode NFC (the form every replica hashes into
    /// the field's register id), checked.
    static func normalizeFieldName(_ raw: String) throws(CofferError) -> String {
        let name = raw.utf8.allSatisfy({ $0 < 0x80 }) ? raw : raw.precomposedStringWithCanonicalMapping
        try checkFieldName(name)
        return name
    }

    static func checkFieldName(_ name: String) throws(CofferError) {
        guard !name.isEmpty, !name.hasPrefix("@"), !name.contains("="),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\n" })
        else {
            throw CofferError(.usage, "invalid field name '\(name)': use letters, digits, '-', '_' or '.'; '@' and '=' are reserved")
        }
    }

    /// Finds the live item called `name`, or addressed as `id:HEX` (a
    /// unique prefix of its id).
    package func resolve(_ db: Database, _ name: String) throws -> ItemID {
        if name.hasPrefix("id:") {
            let prefix = name.dropFirst(3).lowercased()
            guard prefix.count >= 4 else {
                throw CofferError(.usage, "an id prefix needs at least 4 hex digits")
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

    func seal(_ payload: FieldPayload, item: ItemID, register: RegisterID, dot: Dot, vector: VersionVector, at time: Int64, tombstone: Bool) -> FieldVersion {
        let ad = FieldVersion.associatedData(
            vault: vaultID, item: item, register: register, dot: dot, vector: vector, writtenAt: time,
            isTombstone: tombstone)
        return FieldVersion(
            dot: dot, vector: vector, writtenAt: time, isTombstone: tombstone,
            payload: AEAD.seal(Vault.padsPayload(payload, register: register) ? payload.paddedEncoding : payload.encoded, key: keys.item, associatedData: ad))
    }

    /// Which payloads are padded (docs/key-hierarchy.md): the name and
    /// every secret field, whose lengths say something about their
    /// content. The other metadata (type, tags, source, expiry, env,
    /// delete marker) and plain fields are not, which keeps bundles and
    /// imports small.
    static func padsPayload(_ payload: FieldPayload, register: RegisterID) -> Bool {
        payload.isSecret || register == .name
    }

    func open(_ v: FieldVersion, item: ItemID, register: RegisterID) throws -> FieldPayload {
        let ad = FieldVersion.associatedData(
            vault: vaultID, item: item, register: register, dot: v.dot, vector: v.vector, writtenAt: v.writtenAt,
            isTombstone: v.isTombstone)
        var plain: [UInt8]
        do { plain = try AEAD.open(v.payload, key: keys.item, associatedData: ad) } catch {
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

    static let metadataRegisters: [(RegisterID, String)] = [
        (.name, "@name"), (.type, "@type"), (.tags, "@tags"), (.source, "@source"), (.expires, "@expires"),
        (.deleted, "@deleted"), (.env, "@env"),
    ]

    /// Decrypts an item's shown values and its conflicts.
    func decode(_ state: ItemState, row: ItemRow) throws -> Item {
        var name = "", type = ItemType.custom, tags: [String] = [], source: String?, expires: Day?
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
            let ia = declared.firstIndex(of: a.name) ?? Int.max, ib = declared.firstIndex(of: b.name) ?? Int.max
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
    package func apply(_ changes: [Change], to state: inout ItemState, dot: Dot, at time: Int64) {
        for c in changes {
            let current = state.registers[c.register] ?? []
            let vector = Register.vectorForWrite(over: current, dot: dot)
            state.registers[c.register] = [
                seal(c.payload, item: state.id, register: c.register, dot: dot, vector: vector, at: time, tombstone: c.tombstone)
            ]
        }
    }

    /// Refuses a value above ``Field/maxValueBytes`` (16 MiB).
    static func checkSizes(_ fields: [Field], of item: String) throws(CofferError) {
        for f in fields where f.bytes.count > Field.maxValueBytes {
            throw CofferError(
                .usage, "field '\(f.name)' of '\(item)' is \(f.bytes.count) bytes; a value may be at most 16 MiB (\(Field.maxValueBytes) bytes)",
                hint: "store a smaller file, or keep the file elsewhere and its key in coffer")
        }
    }

    /// Refuses an item whose values together exceed ``Field/maxItemBytes``.
    static func checkItemSize(_ fields: [Field], of item: String) throws(CofferError) {
        let total = fields.reduce(0) { $0 + $1.bytes.count }
        guard total <= Field.maxItemBytes else {
            throw CofferError(
                .usage, "the values of '\(item)' would total \(total) bytes; an item may hold at most 28 MiB (\(Field.maxItemBytes) bytes)",
                hint: "put large files in items of their own")
        }
    }

    static func tagsText(_ tags: [String]) -> String { Array(Set(tags)).sorted().joined(separator: "\n") }

    static func checkTag(_ t: String) throws(CofferError) {
        guard !t.isEmpty, !t.contains("\n"), !t.contains(",") else {
            throw CofferError(.usage, "invalid tag '\(t)': tags are non-empty and contain no comma or newline")
        }
    }

    // MARK: Items

    /// Stores a new item. Fails with ``CofferError/Kind/duplicateName`` if a
    /// live item already has the name.
    @discardableResult
    public func add(_ draft: ItemDraft) throws(CofferError) -> Item {
        try add([draft])[0]
    }

    /// Stores several new items in one transaction (all or none), each
    /// its own write.
    @discardableResult
    public func add(_ drafts: [ItemDraft]) throws(CofferError) -> [Item] {
        try add(drafts, allowReserved: false)
    }

    /// `add`, optionally allowing names under ``reservedNamePrefix`` (used
    /// by Vault+Requirements to store registered manifests).
    func add(_ drafts: [ItemDraft], allowReserved: Bool) throws(CofferError) -> [Item] {
        var checked: [(String, ItemDraft)] = []
        for original in drafts {
            var draft = original
            let name = try Vault.normalizeName(draft.name)
            if !allowReserved { try Vault.checkNotReserved(name) }
            for i in draft.fields.indices { draft.fields[i].name = try Vault.normalizeFieldName(draft.fields[i].name) }
            try Vault.checkSizes(draft.fields, of: name)
            try Vault.checkItemSize(draft.fields, of: name)
            for t in draft.tags { try Vault.checkTag(t) }
            let names = draft.fields.map(\.name)
            if let dup = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
                throw CofferError(.usage, "field '\(dup)' is given twice")
            }
            checked.append((name, draft))
        }
        return try CofferError.wrap {
            try write { db, mac in
                var added: [Item] = []
                var seen = Set<String>()
                for (name, draft) in checked {
                    let hash = KeyHierarchy.nameHash(name, nameKey: keys.nameIndex)
                    guard seen.insert(name).inserted, try Queries.itemIDs(db, nameHash: hash).isEmpty else {
                        throw CofferError(.duplicateName, "an item named '\(name)' already exists", remedy: .init(.chooseAnotherName, "choose another name, or rename the existing item", item: name))
                    }
                    added.append(try insert(db, name: name, draft: draft, mac: mac))
                }
                return added
            }
        }
    }

    private func insert(_ db: Database, name: String, draft: ItemDraft, mac: VaultMAC) throws -> Item {
        let id = ItemID.random()
        let dot = try nextDot(db, item: id, policy: draft.policy, mac: mac)
        let now = Clock.nowMillis()
        var changes = [
            Change(register: .name, payload: FieldPayload(name: "@name", value: Array(name.utf8), isSecret: false), tombstone: false),
            Change(register: .type, payload: FieldPayload(name: "@type", value: Array(draft.type.rawValue.utf8), isSecret: false), tombstone: false),
        ]
        if !draft.tags.isEmpty {
            changes.append(Change(register: .tags, payload: FieldPayload(name: "@tags", value: Array(Vault.tagsText(draft.tags).utf8), isSecret: false), tombstone: false))
        }
        if let s = draft.source {
            changes.append(Change(register: .source, payload: FieldPayload(name: "@source", value: Array(s.utf8), isSecret: false), tombstone: false))
        }
        if let e = draft.expires {
            changes.append(Change(register: .expires, payload: FieldPayload(name: "@expires", value: Array(e.description.utf8), isSecret: false), tombstone: false))
        }
        for f in draft.fields {
            changes.append(Change(register: registerID(field: f.name, item: id), payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile), tombstone: false))
        }
        var state = ItemState(id: id)
        apply(changes, to: &state, dot: dot, at: now)
        let row = try derivedRow(for: state, policy: draft.policy, createdAt: now, updatedAt: now)
        var shown: [RegisterID: FieldPayload] = [:]
        for c in changes { shown[c.register] = c.payload }
        try save(db, row: row, old: nil, new: state, now: now, mac: mac, shown: shown)
        return try decode(state, row: row)
    }

    /// The item called `name` (or `id:HEX`), decrypted.
    public func item(named name: String) throws(CofferError) -> Item {
        try CofferError.wrap {
            try store.read { db in
                let id = try resolve(db, name)
                guard let loaded = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                return try decode(loaded.state, row: loaded.row)
            }
        }
    }

    /// Whether a live item has this name.
    public func contains(_ name: String) throws(CofferError) -> Bool {
        do {
            _ = try CofferError.wrap { try store.read { db in try resolve(db, name) } }
            return true
        } catch where error.kind == .itemNotFound {
            return false
        }
    }

    /// Every live item's name, type, tags and expiry (field values are not
    /// decrypted), sorted by name. Items under ``reservedNamePrefix`` (the
    /// vault's own data, such as registered requirements manifests) are
    /// left out.
    public func list() throws(CofferError) -> [ItemSummary] {
        try listIncludingReserved().filter { !Vault.isReserved($0.name) }
    }

    /// The nearest live item name to `name` (a likely typo), for the hint
    /// of an `itemNotFound` error (``CofferError/missingName``). Reads every
    /// item's sealed record: call it only when a person will read it.
    public func suggestion(forMissing name: String) -> String? {
        guard let names = try? list().map(\.name) else { return nil }
        return Suggestion.closest(to: name, among: names)
    }

    /// For an ``CofferError/Kind/itemNotFound`` error about to be shown to
    /// a person: the error to show instead when the vault holds versions of
    /// an item that has no item row. Deleting an `item` row outside coffer
    /// takes its name hash with it, so the lookup that failed cannot tell
    /// that item from a name never used; this can, at the cost of one seek
    /// per item id of the version tables (``Queries/itemWithoutRow(_:)``).
    /// Call it only when a person will read the error, like
    /// ``suggestion(forMissing:)``: a lookup stays O(1) in the vault's size.
    public func tamperingBehindMissingItem() -> CofferError? {
        guard let id = try? store.read({ db in try Queries.itemWithoutRow(db) }) else { return nil }
        return .modifiedOutside(
            "item \(Hex.encode(id).prefix(8)) has field versions but no item row (deleted outside coffer, with its name)")
    }

    /// `list()` including reserved items.
    func listIncludingReserved() throws(CofferError) -> [ItemSummary] {
        // With a session: the listing cache when it was built from exactly
        // this vault state (docs/key-hierarchy.md, "Listing cache"), else a
        // full listing, which then replaces the cache. The stamp and the
        // listing are read in one transaction.
        guard let cache = listingCache else { return try CofferError.wrap { try store.read { db in try fullListing(db) } } }
        let (items, fresh) = try CofferError.wrap {
            try store.read { db -> ([ItemSummary], ListingStamp?) in
                guard let stamp = try Queries.listingStamp(db) else { return (try fullListing(db), nil) }
                if let cached = cache.load(vault: vaultID, stamp: stamp, key: keys.listing) { return (cached, nil) }
                return (try fullListing(db), stamp)
            }
        }
        if let fresh { cache.store(items, vault: vaultID, stamp: fresh, key: keys.listing) }
        return items
    }

    /// Every live item's summary from its sealed record, each checked
    /// against the item's clear columns, in listing order.
    func fullListing(_ db: Database) throws -> [ItemSummary] {
        // One sealed record per item: no field version is read (issue 11).
        let listed = try Queries.listedItems(db)
        var out: [ItemSummary] = []
        out.reserveCapacity(listed.count)
        try keys.record.keepingReadable {
            for l in listed {
                let record = try openRecord(l.record, item: l.row.id, withVersions: false)
                try check(record, row: l.row)
                if record.isDeleted { continue }
                out.append(
                    ItemSummary(
                        id: l.row.id, name: record.name, type: ItemType(rawValue: record.type) ?? .custom, tags: record.tags,
                        source: record.source, expires: record.expires.flatMap(Day.init), policy: record.policy,
                        hasConflict: record.hasConflict, updatedAt: Clock.date(record.updatedAt),
                        username: record.username, url: record.url))
            }
        }
        return out.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Applies `edit` to the item as one write.
    @discardableResult
    public func edit(_ name: String, _ original: ItemEdit) throws(CofferError) -> Item {
        var edit = original
        for i in edit.setFields.indices { edit.setFields[i].name = try Vault.normalizeFieldName(edit.setFields[i].name) }
        edit.unsetFields = edit.unsetFields.map { $0.utf8.allSatisfy({ $0 < 0x80 }) ? $0 : $0.precomposedStringWithCanonicalMapping }
        guard !edit.isEmpty else { throw CofferError(.usage, "nothing to change", remedy: .init(.sayWhatToChange, "say what to change")) }
        let newName = try edit.rename.map { n throws(CofferError) in try Vault.normalizeName(n) }
        if let n = newName { try Vault.checkNotReserved(n) }
        try Vault.checkSizes(edit.setFields, of: name)
        for t in edit.addTags { try Vault.checkTag(t) }
        return try CofferError.wrap {
            try write { db, mac in
                let id = try resolve(db, name)
                guard let (oldRow, _, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                let policy = edit.policy ?? oldRow.policy
                // Before this write's own changes (docs/sync.md,
                // "Local-only items").
                try changePolicy(db, item: id, from: oldRow.policy, to: policy, mac: mac)
                guard let (_, old, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                let current = try decode(old, row: oldRow)
                if !edit.setFields.isEmpty {
                    var after: [String: Field] = [:]
                    for f in current.fields { after[f.name] = f }
                    for f in edit.setFields { after[f.name] = f }
                    for n in edit.unsetFields { after[n] = nil }
                    try Vault.checkItemSize(Array(after.values), of: current.name)
                }
                var changes: [Change] = []
                if let n = newName, n != current.name {
                    let others = try Queries.itemIDs(db, nameHash: KeyHierarchy.nameHash(n, nameKey: keys.nameIndex)).filter { $0 != id }
                    guard others.isEmpty else {
                        throw CofferError(.duplicateName, "an item named '\(n)' already exists", hint: "choose another name")
                    }
                    changes.append(Change(register: .name, payload: FieldPayload(name: "@name", value: Array(n.utf8), isSecret: false), tombstone: false))
                }
                if let t = edit.type, t != current.type {
                    changes.append(Change(register: .type, payload: FieldPayload(name: "@type", value: Array(t.rawValue.utf8), isSecret: false), tombstone: false))
                }
                for f in edit.setFields {
                    changes.append(Change(register: registerID(field: f.name, item: id), payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile), tombstone: false))
                }
                for f in edit.unsetFields {
                    guard current.field(f) != nil else {
                        throw CofferError(.itemNotFound, "item '\(current.name)' has no field '\(f)'", hint: "its fields are: \(current.fields.map(\.name).joined(separator: ", "))")
                    }
                    changes.append(Change(register: registerID(field: f, item: id), payload: FieldPayload(name: f, value: [], isSecret: false), tombstone: true))
                }
                if !edit.addTags.isEmpty || !edit.removeTags.isEmpty {
                    let tags = Set(current.tags).union(edit.addTags).subtracting(edit.removeTags)
                    if tags != Set(current.tags) {
                        changes.append(Change(register: .tags, payload: FieldPayload(name: "@tags", value: Array(Vault.tagsText(Array(tags)).utf8), isSecret: false), tombstone: tags.isEmpty))
                    }
                }
                if let s = edit.source {
                    changes.append(Change(register: .source, payload: FieldPayload(name: "@source", value: Array((s ?? "").utf8), isSecret: false), tombstone: s == nil))
                }
                if let e = edit.expires {
                    changes.append(Change(register: .expires, payload: FieldPayload(name: "@expires", value: Array((e?.description ?? "").utf8), isSecret: false), tombstone: e == nil))
                }
                if edit.env != nil || edit.allowedEnvNames != nil {
                    let env = edit.env ?? current.env, allowed = edit.allowedEnvNames ?? current.allowedEnvNames
                    for (field, variable) in env where !EnvNaming.isValidOverride(variable) {
                        throw CofferError(.usage, "invalid variable name for field '\(field)'", hint: "use letters, digits and '_', not starting with a digit, or '-' to leave the field out")
                    }
                    for v in allowed where !Dotenv.isValidName(v) {
                        throw CofferError(.usage, "invalid variable name '\(v)' to allow", hint: "use letters, digits and '_', not starting with a digit")
                    }
                    let text = Vault.envText(env, allowed: allowed)
                    changes.append(Change(register: .env, payload: FieldPayload(name: "@env", value: Array(text.utf8), isSecret: false), tombstone: text.isEmpty))
                }
                if current.hasDeleteConflict || !(old.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
                    // Editing an item that was deleted concurrently keeps it.
                    changes.append(Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true))
                }
                if changes.isEmpty && policy == oldRow.policy { return current }
                var state = old
                let now = Clock.nowMillis()
                if !changes.isEmpty {
                    apply(changes, to: &state, dot: try nextDot(db, item: id, policy: policy, mac: mac), at: now)
                }
                let row = try derivedRow(for: state, policy: policy, createdAt: oldRow.createdAt, updatedAt: now)
                try save(db, row: row, old: old, new: state, now: now, mac: mac)
                return try decode(state, row: row)
            }
        }
    }

    /// Deletes the item: a delete marker whose vector covers everything
    /// this replica has seen of it. Field versions stay (encrypted) so a
    /// concurrent edit elsewhere can still bring the item back.
    public func delete(_ name: String) throws(CofferError) {
        try CofferError.wrap {
            try write { db, mac in
                let id = try resolve(db, name)
                guard let (oldRow, old, _) = try loadItem(db, id: id) else { return }
                let dot = try nextDot(db, item: id, policy: oldRow.policy, mac: mac)
                let now = Clock.nowMillis()
                var vector = old.vector
                vector[dot.replica] = dot.counter
                var state = old
                state.registers[.deleted] = [
                    seal(FieldPayload(name: "@deleted", value: Array("1".utf8), isSecret: false), item: id, register: .deleted, dot: dot, vector: vector, at: now, tombstone: false)
                ]
                let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                try save(db, row: row, old: old, new: state, now: now, mac: mac)
            }
        }
    }

    /// Every version of every field of the item, oldest first: superseded
    /// ones from the history table and the current ones.
    public func history(_ name: String) throws(CofferError) -> [HistoryEntry] {
        try CofferError.wrap {
            try store.read { db in
                let id = try resolve(db, name)
                var out: [HistoryEntry] = []
                func entry(_ rid: RegisterID, _ v: FieldVersion, current: Bool) throws -> HistoryEntry {
                    let p = try open(v, item: id, register: rid)
                    return HistoryEntry(
                        field: p.name, value: v.isTombstone ? nil : p.text, isSecret: p.isSecret, removed: v.isTombstone,
                        writtenAt: Clock.date(v.writtenAt), replica: v.dot.replica, counter: v.dot.counter, isCurrent: current)
                }
                for (rid, v, _) in try Queries.history(db, item: id) { out.append(try entry(rid, v, current: false)) }
                guard let loaded = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                for (rid, versions) in loaded.state.registers {
                    for v in versions { out.append(try entry(rid, v, current: true)) }
                }
                return out.sorted { ($0.writtenAt, $0.counter, $0.field) < ($1.writtenAt, $1.counter, $1.field) }
            }
        }
    }

    /// The raw replicated state of an item (for tests and sync code).
    public func state(of name: String) throws(CofferError) -> ItemState {
        try CofferError.wrap {
            try store.read { db in
                let id = try resolve(db, name)
                guard let loaded = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                return loaded.state
            }
        }
    }

    /// This file's replica id.
    public func replicaID() throws(CofferError) -> ReplicaID {
        try CofferError.wrap { try store.read { db in try Queries.localReplica(db).id } }
    }
}

/// The master key and the sub-keys derived from it.
package final class VaultKeys: Sendable {
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
}
