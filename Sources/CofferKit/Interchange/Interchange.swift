import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// Interchange: importing other programs' exports into items and
/// exporting items to them, through InterchangeEntry
/// (docs/import-export.md). The façade's forwarders are in
/// Interchange/Vault+Interchange.swift.
package struct Interchange: VaultComponent {
    package let core: VaultCore
}

/// Called during a long import with (entries done, entries in all).
public typealias InterchangeProgress = @Sendable (Int, Int) -> Void

extension Interchange {
    package func importEntries(
        _ entries: [InterchangeEntry], options: InterchangeOptions = InterchangeOptions(),
        progress: InterchangeProgress? = nil
    ) throws(CofferError) -> InterchangeReport {
        // Every entry is checked before the transaction starts.
        for e in entries { try Interchange.checkEntry(e) }
        var i = 0
        return try importEntries(expectedCount: entries.count, options: options, progress: progress) { () throws(CofferError) -> InterchangeEntry? in
            guard i < entries.count else { return nil }
            i += 1
            return entries[i - 1]
        }
    }

    package func importEntries(
        _ stream: InterchangeStream, options: InterchangeOptions = InterchangeOptions(),
        progress: InterchangeProgress? = nil
    ) throws(CofferError) -> InterchangeReport {
        defer { stream.stop() }
        return try importEntries(expectedCount: stream.expectedCount, options: options, progress: progress) { () throws(CofferError) -> InterchangeEntry? in
            guard let e = try stream.next() else { return nil }
            try Interchange.checkEntry(e)
            return e
        }
    }

    private func importEntries(
        expectedCount: Int, options: InterchangeOptions, progress: InterchangeProgress?,
        next: () throws(CofferError) -> InterchangeEntry?
    ) throws(CofferError) -> InterchangeReport {
        var prefix = ""
        if let p = options.prefix?.trimmingCharacters(in: CharacterSet(charactersIn: "/")), !p.isEmpty {
            prefix = try Vault.normalizeName(p)
            try CredentialRequirements.checkNotReserved(prefix)
        }
        var last: Dot?
        /// The first write checks that this file still owns its replica id
        /// (``nextDot(_:)``); the following counters are handed out here
        /// and stored once at the end (``Queries/storeLocalCounter(_:_:)``).
        // The vault MAC accumulator every write goes through: the write
        // transaction's own for a real import; for a dry run, which writes
        // nothing, one that is never committed.
        var mac = VaultMAC(key: keys.mac)
        func dot(_ db: StoreConnection) throws -> Dot {
            guard let previous = last else {
                let first = try identity.nextDot(db, mac)
                last = first
                return first
            }
            let next = Dot(replica: previous.replica, counter: previous.counter + 1)
            last = next
            return next
        }
        func work(_ db: StoreConnection) throws -> InterchangeReport {
            var report = InterchangeReport(dryRun: options.dryRun)
            var taken = Set<String>()
            // An empty vault has no names to look up: every name taken is
            // in `taken`. New items are buffered into multi-row INSERTs.
            let empty = try Queries.holdsNoItems(db)
            // New items get their random ids in ascending order: every
            // table is keyed by item id first, so the rows are appended at
            // the end of each B-tree instead of landing on a random page
            // of tables far larger than SQLite's cache (docs/import-export.md).
            // (More than needed when the count is an estimate; past it,
            // ids are drawn one by one.)
            let newIDs = options.dryRun ? [] : Interchange.ascendingRandomIDs(expectedCount)
            var nextID = 0
            var done = 0
            // Thousands of boxes: their random nonces drawn 64 at a time
            // (one `getrandom` call each otherwise; AEAD+Batch.swift).
            // One set for this thread (entries with history), one for the
            // sealing thread.
            let sealers = Sealers(item: AEAD.BatchSealer(key: keys.item), record: AEAD.BatchSealer(key: keys.record))
            let workerSealers = Sealers(item: AEAD.BatchSealer(key: keys.item), record: AEAD.BatchSealer(key: keys.record))
            let inserter = NewItemInserter(db, mac: mac)
            // New entries without history (most) are sealed and turned
            // into rows on a second thread, with its own MAC accumulator,
            // while this one runs the statements of the batches before.
            let sealerMAC = mac.sibling()
            let sealer = EntrySealer(mac: sealerMAC) { job in try sealNewEntry(job, sealers: workerSealers) }
            defer { sealer.stop() }
            var batch: [EntrySealer.Job] = []
            batch.reserveCapacity(EntrySealer.batchSize)
            while let entry = try next() {
                if let progress, done % 256 == 0 { progress(done, max(expectedCount, done)) }
                done += 1
                let cleaned = InterchangeEntry.cleanName(entry.name)
                let base = prefix.isEmpty ? cleaned : prefix + "/" + cleaned
                var n = 1
                while true {
                    let candidate = n == 1 ? base : "\(base) (\(n))"
                    n += 1
                    guard !taken.contains(candidate) else { continue }
                    let ids = empty ? [] : try Queries.itemIDs(db, nameHash: KeyHierarchy.nameHash(candidate, nameKey: keys.nameIndex))
                    if ids.isEmpty {
                        taken.insert(candidate)
                        if !options.dryRun {
                            let id = nextID < newIDs.count ? newIDs[nextID] : ItemID.random()
                            nextID += 1
                            if entry.history.isEmpty {
                                batch.append(EntrySealer.Job(id: id, name: candidate, entry: entry, dot: try dot(db), now: Clock.nowMillis()))
                                if batch.count == EntrySealer.batchSize {
                                    sealer.submit(batch)
                                    batch.removeAll(keepingCapacity: true)
                                    for p in try sealer.take(leaving: EntrySealer.maxAhead) { try inserter.execute(p) }
                                }
                            } else {
                                try insertEntry(db, id: id, name: candidate, entry: entry, dot: dot, mac: mac, sealers: sealers)
                            }
                        }
                        report.lines.append(.init(entry: base, name: candidate, action: .added, origin: entry.origin))
                        break
                    }
                    if ids.count == 1, let (row, state, _) = try loadItem(db, id: ids[0]) {
                        let item = try decode(state, row: row)
                        if Interchange.isIdentical(item, entry) {
                            taken.insert(candidate)
                            report.lines.append(.init(entry: base, name: candidate, action: .identical, origin: entry.origin))
                            break
                        }
                        if options.onConflict == .overwrite {
                            taken.insert(candidate)
                            if !options.dryRun { try overwrite(db, row: row, state: state, item: item, with: entry, dot: dot, mac: mac) }
                            report.lines.append(.init(entry: base, name: candidate, action: .overwritten, origin: entry.origin))
                            break
                        }
                    }
                    if options.onConflict == .skip {
                        report.lines.append(.init(entry: base, name: candidate, action: .skipped, origin: entry.origin))
                        break
                    }
                    // keep-both (or several items share the name): try the next suffix.
                }
            }
            if !options.dryRun {
                sealer.submit(batch)
                for p in try sealer.take(leaving: 0) { try inserter.execute(p) }
                for p in sealer.finish() { try inserter.execute(p) }
                mac.absorb(sealerMAC)
                if let last { try Queries.storeLocalCounter(db, last, mac: mac) }
            }
            progress?(done, done)
            return report
        }
        return try CofferError.wrap {
            // Thousands of seals and hashes: keep the keys readable for the
            // whole import instead of two mprotect calls per use.
            try keys.item.keepingReadable {
                try keys.nameIndex.keepingReadable {
                    try keys.fieldID.keepingReadable {
                        try keys.record.keepingReadable {
                            if options.dryRun { return try store.read(work) }
                            return try write { db, accumulator in
                                mac = accumulator
                                return try accumulator.keepingReadable {
                                    // As a bundle import does: a larger page cache for
                                    // the transaction, and into a vault without items
                                    // the two secondary indexes built once at the end.
                                    try Queries.bulkWrite(db) { _ in try work(db) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// `count` random item ids (16 random bytes each, as ``ItemID/random()``),
    /// sorted: their values are as random as ever, only the order in which
    /// an import hands them out follows the order of the entries.
    static func ascendingRandomIDs(_ count: Int) -> [ItemID] {
        guard count > 0 else { return [] }
        let bytes = Random.bytes(16 * count)
        var ids: [ItemID] = []
        ids.reserveCapacity(count)
        for i in 0..<count {
            if let id = ItemID(bytes: bytes[(16 * i)..<(16 * i + 16)]) { ids.append(id) }
        }
        ids.sort()
        return ids
    }

    /// Rejects an entry Coffer cannot store, naming where it is in its file.
    static func checkEntry(_ e: InterchangeEntry) throws(CofferError) {
        func bad(_ why: String) -> CofferError {
            CofferError(
                .badData, "\(e.origin.isEmpty ? "entry '\(e.name)'" : e.origin): \(why)", hint: "fix the file and import it again; nothing was imported")
        }
        var seen = Set<String>()
        for version in e.history.map(\.fields) + [e.fields] {
            seen.removeAll()
            for f in version {
                // Printable ASCII without '=' and not starting with '@' is
                // valid (most names): no per-character Unicode look-ups.
                let plain =
                    f.name.utf8.first.map { $0 != UInt8(ascii: "@") } == true
                    && f.name.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "=") }
                if !plain {
                    do { try Vault.checkFieldName(f.name) } catch { throw bad("invalid field name '\(f.name)'") }
                }
                guard seen.insert(f.name).inserted else { throw bad("field '\(f.name)' is given twice") }
                guard f.bytes.count <= Field.maxValueBytes else { throw bad("field '\(f.name)' holds \(f.bytes.count) bytes; a field may hold at most 16 MiB") }
            }
            let total = version.reduce(0) { $0 + $1.bytes.count }
            guard total <= Field.maxItemBytes else { throw bad("its values total \(total) bytes; an item may hold at most 28 MiB") }
        }
        for t in e.tags {
            do { try Vault.checkTag(t) } catch {
                throw bad("invalid tag '\(t.replacingOccurrences(of: "\n", with: "\\n"))' (tags contain no comma or newline)")
            }
        }
        for (field, variable) in e.env where !EnvNaming.isValidOverride(variable) {
            throw bad("invalid variable name '\(variable)' for field '\(field)'")
        }
    }

    /// Same type, fields (names, values, secrecy), tags, source, expiry and
    /// variable names. The sync policy and history are not compared.
    static func isIdentical(_ item: Item, _ e: InterchangeEntry) -> Bool {
        item.type == e.type && Set(item.fields) == Set(e.fields) && Set(item.tags) == Set(e.tags)
            && item.source == e.source && item.expires == e.expires && item.env == e.env && item.conflicts.isEmpty
    }

    /// The `@env` register's text: `FIELD=VAR` lines by field, then one
    /// `+VAR` line per guarded name the item may set.
    static func envText(_ env: [String: String], allowed: Set<String> = []) -> String {
        (env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + allowed.sorted().map { "+" + $0 }).joined(separator: "\n")
    }

    private static func meta(_ rid: RegisterID, _ name: String, _ text: String) -> Change {
        Change(register: rid, payload: FieldPayload(name: name, value: Array(text.utf8), isSecret: false), tombstone: false)
    }

    /// Changes that turn fields `old` into `new`.
    private func fieldChanges(from old: [Field], to new: [Field], item: ItemID) -> [Change] {
        var changes: [Change] = []
        let before = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for f in new where before[f.name] != f {
            changes.append(
                Change(
                    register: registerID(field: f.name, item: item),
                    payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile), tombstone: false))
        }
        let names = Set(new.map(\.name))
        for f in old where !names.contains(f.name) {
            changes.append(
                Change(register: registerID(field: f.name, item: item), payload: FieldPayload(name: f.name, value: [], isSecret: false), tombstone: true))
        }
        return changes
    }

    /// An import's batch sealers under the item and the record keys.
    private struct Sealers {
        let item: AEAD.BatchSealer
        let record: AEAD.BatchSealer
    }

    /// The metadata registers a new item from `entry` gets in its first write.
    private static func metaChanges(name: String, entry: InterchangeEntry) -> [Change] {
        var changes = [
            Self.meta(.name, "@name", name), Self.meta(.type, "@type", entry.type.rawValue),
        ]
        if !entry.tags.isEmpty { changes.append(Self.meta(.tags, "@tags", Vault.tagsText(entry.tags))) }
        if let s = entry.source { changes.append(Self.meta(.source, "@source", s)) }
        if let e = entry.expires { changes.append(Self.meta(.expires, "@expires", e.description)) }
        if !entry.env.isEmpty { changes.append(Self.meta(.env, "@env", Interchange.envText(entry.env))) }
        return changes
    }

    /// A new item from an entry without history, in one write stamped
    /// `job.dot` at `job.now`: its row, sealed record and state, without
    /// touching the database (run on the sealing thread, EntrySealer).
    private func sealNewEntry(_ job: EntrySealer.Job, sealers: Sealers) throws -> (row: ItemRow, record: [UInt8], state: ItemState) {
        let write = Self.metaChanges(name: job.name, entry: job.entry) + fieldChanges(from: [], to: job.entry.fields, item: job.id)
        var state = ItemState(id: job.id)
        apply(write, to: &state, dot: job.dot, at: job.now, sealer: sealers.item)
        // What each register shows, as written here: the record needs the
        // name, type, username… that were just sealed (not decrypted again).
        var shown: [RegisterID: FieldPayload] = [:]
        for c in write { shown[c.register] = c.payload }
        // As ``derivedRow(for:policy:createdAt:updatedAt:)`` gives it for a
        // new local item: named, not deleted, no conflict.
        let row = ItemRow(
            id: job.id, policy: job.entry.policy, nameHash: KeyHierarchy.nameHash(job.name, nameKey: keys.nameIndex), isDeleted: false,
            hasConflict: false, createdAt: job.now, updatedAt: job.now)
        return (row, try sealRecord(state: state, row: row, shown: shown, sealer: sealers.record), state)
    }

    /// A new item from an entry with history: its history versions as
    /// earlier writes (kept in the item's history), then the entry as it
    /// is now. (Entries without history: ``sealNewEntry(_:sealers:)``.)
    private func insertEntry(
        _ db: StoreConnection, id: ItemID, name: String, entry: InterchangeEntry, dot: (StoreConnection) throws -> Dot, mac: VaultMAC, sealers: Sealers
    ) throws {
        let now = Clock.nowMillis()
        let changes = Self.metaChanges(name: name, entry: entry)
        let versions = entry.history + [InterchangeVersion(fields: entry.fields)]
        var state = ItemState(id: id)
        var saved: ItemState?
        var previous: [Field] = []
        var createdAt = now
        // What each register shows, as written here: the row and the
        // record need the name, type, username… that were just sealed,
        // so they are taken from here instead of decrypted again.
        var shown: [RegisterID: FieldPayload] = [:]
        let nameHash = KeyHierarchy.nameHash(name, nameKey: keys.nameIndex)
        for (i, version) in versions.enumerated() {
            let at = i == versions.count - 1 ? now : min(now, version.writtenAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? now)
            if i == 0 { createdAt = at }
            let write = (i == 0 ? changes : []) + fieldChanges(from: previous, to: version.fields, item: id)
            previous = version.fields
            guard !write.isEmpty else { continue }
            apply(write, to: &state, dot: try dot(db), at: at, sealer: sealers.item)
            for c in write { shown[c.register] = c.payload }
            // As ``derivedRow(for:policy:createdAt:updatedAt:)`` gives it
            // for a new local item: named, not deleted, no conflict.
            let row = ItemRow(id: id, policy: entry.policy, nameHash: nameHash, isDeleted: false, hasConflict: false, createdAt: createdAt, updatedAt: at)
            if let saved {
                try save(db, row: row, old: saved, new: state, now: at, mac: mac)
            } else {
                // Later writes retire these versions: insert them now.
                try Queries.insertNewItem(
                    db, row: row, record: try sealRecord(state: state, row: row, shown: shown, sealer: sealers.record), state: state, mac: mac)
            }
            saved = state
        }
    }

    /// `--on-conflict overwrite`: one edit making the item equal to the
    /// entry (the sync policy stays as it is).
    private func overwrite(
        _ db: StoreConnection, row oldRow: ItemRow, state old: ItemState, item current: Item, with e: InterchangeEntry, dot: (StoreConnection) throws -> Dot,
        mac: VaultMAC
    ) throws {
        var changes: [Change] = []
        if current.type != e.type { changes.append(Self.meta(.type, "@type", e.type.rawValue)) }
        changes += fieldChanges(from: current.fields, to: e.fields, item: current.id)
        if Set(current.tags) != Set(e.tags) {
            changes.append(
                Change(
                    register: .tags, payload: FieldPayload(name: "@tags", value: Array(Vault.tagsText(e.tags).utf8), isSecret: false), tombstone: e.tags.isEmpty
                ))
        }
        if current.source != e.source {
            changes.append(
                Change(
                    register: .source, payload: FieldPayload(name: "@source", value: Array((e.source ?? "").utf8), isSecret: false), tombstone: e.source == nil)
            )
        }
        if current.expires != e.expires {
            changes.append(
                Change(
                    register: .expires, payload: FieldPayload(name: "@expires", value: Array((e.expires?.description ?? "").utf8), isSecret: false),
                    tombstone: e.expires == nil))
        }
        if current.env != e.env {
            // An import never sets an opt-in for a guarded variable, nor
            // takes the user's away: the item keeps its own.
            let text = Interchange.envText(e.env, allowed: current.allowedEnvNames)
            changes.append(Change(register: .env, payload: FieldPayload(name: "@env", value: Array(text.utf8), isSecret: false), tombstone: text.isEmpty))
        }
        if current.hasDeleteConflict || !(old.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
            changes.append(Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true))
        }
        // Conflicted registers the entry leaves as they are get one write
        // too, so the overwrite settles them.
        for c in current.conflicts where !c.field.hasPrefix("@") && !changes.contains(where: { $0.payload.name == c.field }) {
            if let f = e.fields.first(where: { $0.name == c.field }) {
                changes.append(
                    Change(
                        register: registerID(field: f.name, item: current.id),
                        payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile), tombstone: false))
            }
        }
        guard !changes.isEmpty else { return }
        var state = old
        let now = Clock.nowMillis()
        apply(changes, to: &state, dot: try dot(db), at: now)
        let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
        try save(db, row: row, old: old, new: state, now: now, mac: mac)
    }

    // MARK: Plaintext export

    package typealias InterchangeSelection = Vault.InterchangeSelection

    package func exportEntries(includeLocalOnly: Bool, history: Bool) throws(CofferError) -> InterchangeSelection {
        try CofferError.wrap {
            try store.read { db in
                // A plaintext copy of a vault edited outside coffer would
                // carry the edit: check the whole file first, and each item.
                try checkVaultMAC(db)
                var out = InterchangeSelection(entries: [], leftOutLocalOnly: [], conflicted: [])
                // One pass over the tables (not three look-ups per item),
                // with the item key readable throughout instead of two
                // mprotect calls per decrypted value.
                try keys.item.keepingReadable {
                    try keys.record.keepingReadable {
                        try Queries.forEachStoredItem(db, history: history) { stored in
                            let (row, state) = (stored.row, stored.state)
                            // As ``loadItem(_:id:)`` checks them.
                            try check(try openRecord(stored.record, item: row.id), row: row, state: state)
                            let item = try decode(state, row: row)
                            if Vault.isReserved(item.name) { return }
                            if row.policy == .localOnly && !includeLocalOnly {
                                out.leftOutLocalOnly.append(item.name)
                                return
                            }
                            if !item.conflicts.isEmpty || item.hasDeleteConflict { out.conflicted.append(item.name) }
                            var entry = InterchangeEntry(
                                name: item.name, type: item.type, fields: item.fields, tags: item.tags.sorted(), source: item.source,
                                expires: item.expires, policy: item.policy, env: item.env, origin: "item '\(item.name)'")
                            if history { entry.history = try fieldHistory(superseded: stored.history, state: state) }
                            out.entries.append(entry)
                        }
                    }
                }
                out.entries.sort { $0.name < $1.name }
                out.leftOutLocalOnly.sort()
                out.conflicted.sort()
                return out
            }
        }
    }

    /// The item's fields after each earlier write, oldest first: every
    /// version of every user field (superseded and current) replayed in
    /// write order, one state per write, the last (current) one left out.
    /// `superseded`: the item's history rows (``Queries/forEachStoredItem(_:history:_:)``).
    private func fieldHistory(superseded: [(register: RegisterID, version: FieldVersion)], state: ItemState) throws -> [InterchangeVersion] {
        struct V {
            var register: RegisterID
            var version: FieldVersion
        }
        var all: [V] = []
        for (rid, v) in superseded where !rid.isMetadata { all.append(V(register: rid, version: v)) }
        for (rid, versions) in state.registers where !rid.isMetadata {
            for v in versions { all.append(V(register: rid, version: v)) }
        }
        // Every field version from one write (an item never edited since
        // it was made): there is no earlier state, and nothing to decrypt.
        guard let first = all.first?.version.dot, all.contains(where: { $0.version.dot != first }) else { return [] }
        all.sort { ($0.version.writtenAt, $0.version.dot) < ($1.version.writtenAt, $1.version.dot) }
        var current: [String: Field] = [:]
        var order: [String] = []
        var out: [InterchangeVersion] = []
        var i = 0
        while i < all.count {
            let dot = all[i].version.dot
            let at = all[i].version.writtenAt
            while i < all.count && all[i].version.dot == dot {
                let p = try open(all[i].version, item: state.id, register: all[i].register)
                if all[i].version.isTombstone {
                    current[p.name] = nil
                } else {
                    if current[p.name] == nil && !order.contains(p.name) { order.append(p.name) }
                    current[p.name] = Field(name: p.name, bytes: p.value, isSecret: p.isSecret, isFile: p.isFile)
                }
                i += 1
            }
            out.append(InterchangeVersion(fields: order.compactMap { current[$0] }, writtenAt: Clock.date(at)))
        }
        out.removeLast()
        // Writes that changed only metadata repeat the fields: keep one.
        var distinct: [InterchangeVersion] = []
        for v in out where distinct.last.map({ Set($0.fields) != Set(v.fields) }) ?? true { distinct.append(v) }
        let now = Set(current.values)
        while let last = distinct.last, Set(last.fields) == now { distinct.removeLast() }
        return distinct
    }
}
