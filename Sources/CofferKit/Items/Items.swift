import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// Items: adding, reading, listing, editing, deleting one item, and its
/// history. The façade's forwarders are in Items/Vault+Items.swift.
package struct Items: VaultComponent {
    package let core: VaultCore
}

extension Items {
    @discardableResult
    package func add(_ draft: ItemDraft) throws(CofferError) -> Item {
        try add([draft])[0]
    }

    @discardableResult
    package func add(_ drafts: [ItemDraft]) throws(CofferError) -> [Item] {
        try add(drafts, allowReserved: false)
    }

    /// `add`, optionally allowing names under ``reservedNamePrefix`` (used
    /// by Vault+Requirements to store registered manifests).
    func add(_ drafts: [ItemDraft], allowReserved: Bool) throws(CofferError) -> [Item] {
        var checked: [(String, ItemDraft)] = []
        for original in drafts {
            var draft = original
            let name = try Vault.normalizeName(draft.name)
            if !allowReserved { try CredentialRequirements.checkNotReserved(name) }
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
                        throw CofferError(
                            .duplicateName, "an item named '\(name)' already exists",
                            remedy: .init(.chooseAnotherName, "choose another name, or rename the existing item", item: name))
                    }
                    added.append(try insert(db, name: name, draft: draft, mac: mac))
                }
                return added
            }
        }
    }

    private func insert(_ db: StoreConnection, name: String, draft: ItemDraft, mac: VaultMAC) throws -> Item {
        let id = ItemID.random()
        let dot = try identity.nextDot(db, item: id, policy: draft.policy, mac: mac)
        let now = Clock.nowMillis()
        var changes = [
            Change(register: .name, payload: FieldPayload(name: "@name", value: Array(name.utf8), isSecret: false), tombstone: false),
            Change(register: .type, payload: FieldPayload(name: "@type", value: Array(draft.type.rawValue.utf8), isSecret: false), tombstone: false),
        ]
        if !draft.tags.isEmpty {
            changes.append(
                Change(register: .tags, payload: FieldPayload(name: "@tags", value: Array(Vault.tagsText(draft.tags).utf8), isSecret: false), tombstone: false))
        }
        if let s = draft.source {
            changes.append(Change(register: .source, payload: FieldPayload(name: "@source", value: Array(s.utf8), isSecret: false), tombstone: false))
        }
        if let e = draft.expires {
            changes.append(
                Change(register: .expires, payload: FieldPayload(name: "@expires", value: Array(e.description.utf8), isSecret: false), tombstone: false))
        }
        for f in draft.fields {
            changes.append(
                Change(
                    register: registerID(field: f.name, item: id), payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile),
                    tombstone: false))
        }
        var state = ItemState(id: id)
        apply(changes, to: &state, dot: dot, at: now)
        let row = try derivedRow(for: state, policy: draft.policy, createdAt: now, updatedAt: now)
        var shown: [RegisterID: FieldPayload] = [:]
        for c in changes { shown[c.register] = c.payload }
        try save(db, row: row, old: nil, new: state, now: now, mac: mac, shown: shown)
        return try decode(state, row: row)
    }

    package func item(named name: String) throws(CofferError) -> Item {
        try CofferError.wrap {
            // The read verbs' hot path: SQLite's C API, no GRDB queue
            // (``VaultStore/readDirect(_:)``), the same checks.
            try store.readDirect { db in
                let id = try resolve(db, name)
                guard let loaded = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                return try decode(loaded.state, row: loaded.row)
            }
        }
    }

    package func contains(_ name: String) throws(CofferError) -> Bool {
        do {
            _ = try CofferError.wrap { try store.readDirect { db in try resolve(db, name) } }
            return true
        } catch  where error.kind == .itemNotFound {
            return false
        }
    }

    package func list() throws(CofferError) -> [ItemSummary] {
        try listIncludingReserved().filter { !Vault.isReserved($0.name) }
    }

    package func suggestion(forMissing name: String) -> String? {
        suggestions(forMissing: name)?.names.first
    }

    package func suggestions(forMissing name: String) -> MissingNameSuggestion? {
        guard let listed = try? list() else { return nil }
        return MissingNameSuggestion.find(for: name, among: listed.map { ($0.name, $0.id) })
    }

    package func tamperingBehindMissingItem() -> CofferError? {
        guard let id = try? store.readDirect({ db in try Queries.itemWithoutRow(db) }) else { return nil }
        return .modifiedOutside(
            "item \(Hex.encode(id).prefix(8)) has field versions but no item row (deleted outside coffer, with its name)")
    }

    /// `list()` including reserved items.
    func listIncludingReserved() throws(CofferError) -> [ItemSummary] {
        // With a session: the listing cache when it was built from exactly
        // this vault state (docs/key-hierarchy.md, "Listing cache"), else a
        // full listing, which then replaces the cache. The stamp and the
        // listing are read in one transaction.
        guard let cache = listingCache else { return try CofferError.wrap { try store.readDirect { db in try fullListing(db) } } }
        let (items, fresh) = try CofferError.wrap {
            try store.readDirect { db -> ([ItemSummary], ListingStamp?) in
                guard let stamp = try Queries.listingStamp(db) else { return (try fullListing(db), nil) }
                if let cached = cache.load(vault: vaultID, stamp: stamp, key: keys.listing) {
                    // A long chain of deltas is folded into a new base.
                    return (cached.items, cached.steps >= ListingCache.compactAfter ? stamp : nil)
                }
                return (try fullListing(db), stamp)
            }
        }
        if let fresh { cache.store(items, vault: vaultID, stamp: fresh, key: keys.listing) }
        return items
    }

    /// Every live item's summary from its sealed record, each checked
    /// against the item's clear columns, in listing order.
    func fullListing(_ db: ReadConnection) throws -> [ItemSummary] {
        // One sealed record per item: no field version is read (issue 11).
        let listed = try Queries.listedItems(db)
        var out: [ItemSummary] = []
        out.reserveCapacity(listed.count)
        try keys.record.keepingReadable {
            for l in listed {
                if let summary = try core.listingSummary(l) { out.append(summary) }
            }
        }
        return out.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    @discardableResult
    package func edit(_ name: String, _ original: ItemEdit) throws(CofferError) -> Item {
        var edit = original
        for i in edit.setFields.indices { edit.setFields[i].name = try Vault.normalizeFieldName(edit.setFields[i].name) }
        edit.unsetFields = edit.unsetFields.map { $0.utf8.allSatisfy({ $0 < 0x80 }) ? $0 : $0.precomposedStringWithCanonicalMapping }
        guard !edit.isEmpty else { throw CofferError(.usage, "nothing to change", remedy: .init(.sayWhatToChange, "say what to change")) }
        let newName = try edit.rename.map { n throws(CofferError) in try Vault.normalizeName(n) }
        if let n = newName { try CredentialRequirements.checkNotReserved(n) }
        try Vault.checkSizes(edit.setFields, of: name)
        for t in edit.addTags { try Vault.checkTag(t) }
        return try CofferError.wrap {
            try write { db, mac in
                let id = try resolve(db, name)
                guard let (oldRow, _, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                let policy = edit.policy ?? oldRow.policy
                // Before this write's own changes (docs/sync.md,
                // "Local-only items").
                try identity.changePolicy(db, item: id, from: oldRow.policy, to: policy, mac: mac)
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
                    changes.append(
                        Change(register: .type, payload: FieldPayload(name: "@type", value: Array(t.rawValue.utf8), isSecret: false), tombstone: false))
                }
                for f in edit.setFields {
                    changes.append(
                        Change(
                            register: registerID(field: f.name, item: id),
                            payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile), tombstone: false))
                }
                for f in edit.unsetFields {
                    guard current.field(f) != nil else {
                        throw CofferError(
                            .itemNotFound, "item '\(current.name)' has no field '\(f)'",
                            hint: "its fields are: \(current.fields.map(\.name).joined(separator: ", "))")
                    }
                    changes.append(
                        Change(register: registerID(field: f, item: id), payload: FieldPayload(name: f, value: [], isSecret: false), tombstone: true))
                }
                if !edit.addTags.isEmpty || !edit.removeTags.isEmpty {
                    let tags = Set(current.tags).union(edit.addTags).subtracting(edit.removeTags)
                    if tags != Set(current.tags) {
                        changes.append(
                            Change(
                                register: .tags, payload: FieldPayload(name: "@tags", value: Array(Vault.tagsText(Array(tags)).utf8), isSecret: false),
                                tombstone: tags.isEmpty))
                    }
                }
                if let s = edit.source {
                    changes.append(
                        Change(register: .source, payload: FieldPayload(name: "@source", value: Array((s ?? "").utf8), isSecret: false), tombstone: s == nil))
                }
                if let e = edit.expires {
                    changes.append(
                        Change(
                            register: .expires, payload: FieldPayload(name: "@expires", value: Array((e?.description ?? "").utf8), isSecret: false),
                            tombstone: e == nil))
                }
                if edit.env != nil || edit.allowedEnvNames != nil {
                    let env = edit.env ?? current.env
                    let allowed = edit.allowedEnvNames ?? current.allowedEnvNames
                    for (field, variable) in env where !EnvNaming.isValidOverride(variable) {
                        throw CofferError(
                            .usage, "invalid variable name for field '\(field)'",
                            hint: "use letters, digits and '_', not starting with a digit, or '-' to leave the field out")
                    }
                    for v in allowed where !Dotenv.isValidName(v) {
                        throw CofferError(.usage, "invalid variable name '\(v)' to allow", hint: "use letters, digits and '_', not starting with a digit")
                    }
                    let text = Interchange.envText(env, allowed: allowed)
                    changes.append(
                        Change(register: .env, payload: FieldPayload(name: "@env", value: Array(text.utf8), isSecret: false), tombstone: text.isEmpty))
                }
                if current.hasDeleteConflict || !(old.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
                    // Editing an item that was deleted concurrently keeps it.
                    changes.append(Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true))
                }
                if changes.isEmpty && policy == oldRow.policy { return current }
                var state = old
                let now = Clock.nowMillis()
                if !changes.isEmpty {
                    apply(changes, to: &state, dot: try identity.nextDot(db, item: id, policy: policy, mac: mac), at: now)
                }
                let row = try derivedRow(for: state, policy: policy, createdAt: oldRow.createdAt, updatedAt: now)
                try save(db, row: row, old: old, new: state, now: now, mac: mac)
                return try decode(state, row: row)
            }
        }
    }

    package func delete(_ name: String) throws(CofferError) {
        try CofferError.wrap {
            try write { db, mac in
                let id = try resolve(db, name)
                guard let (oldRow, old, _) = try loadItem(db, id: id) else { return }
                let dot = try identity.nextDot(db, item: id, policy: oldRow.policy, mac: mac)
                let now = Clock.nowMillis()
                var vector = old.vector
                vector[dot.replica] = dot.counter
                var state = old
                state.registers[.deleted] = [
                    seal(
                        FieldPayload(name: "@deleted", value: Array("1".utf8), isSecret: false), item: id, register: .deleted, dot: dot, vector: vector,
                        at: now, tombstone: false)
                ]
                let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                try save(db, row: row, old: old, new: state, now: now, mac: mac)
            }
        }
    }

    package func history(_ name: String) throws(CofferError) -> [HistoryEntry] {
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

    package func state(of name: String) throws(CofferError) -> ItemState {
        try CofferError.wrap {
            try store.read { db in
                let id = try resolve(db, name)
                guard let loaded = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                return loaded.state
            }
        }
    }

    package func replicaID() throws(CofferError) -> ReplicaID {
        try CofferError.wrap { try store.read { db in try Queries.localReplica(db).id } }
    }
}

extension Items {
    /// A reserved registry item (`.coffer/requirements`, `.coffer/members`),
    /// or nil. If two replicas each created one before syncing there are
    /// several: reading unites their fields (the oldest item wins a name);
    /// with `heal`, the others' fields are copied into the oldest and the
    /// others are deleted.
    func registry(named name: String, heal: Bool) throws(CofferError) -> Item? {
        do {
            return try item(named: name)
        } catch  where error.kind == .itemNotFound {
            return nil
        } catch  where error.kind == .ambiguousName {
            var all: [Item] = []
            for s in try listIncludingReserved() where s.name == name {
                all.append(try requirements.item(id: s.id))
            }
            all.sort { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            guard var keeper = all.first else { return nil }
            var extra: [Field] = []
            for other in all.dropFirst() {
                for f in other.fields where keeper.field(f.name) == nil && !extra.contains(where: { $0.name == f.name }) {
                    extra.append(f)
                }
            }
            if !heal {
                keeper.fields += extra
                return keeper
            }
            if !extra.isEmpty {
                var e = ItemEdit()
                e.setFields = extra
                keeper = try edit("id:" + keeper.id.hex, e)
            }
            for other in all.dropFirst() { try delete("id:" + other.id.hex) }
            return keeper
        }
    }
}
