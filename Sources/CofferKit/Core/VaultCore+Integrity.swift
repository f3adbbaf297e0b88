import CofferCrypto
import CofferStore
import CofferSync
import Foundation

extension VaultCore {
    // MARK: Writes

    /// Runs `body` in one immediate write transaction with an accumulator
    /// for the vault MAC, folded into the stored MAC before commit. Every
    /// write of the vault goes through here. It holds the keys for the
    /// whole transaction (``VaultKeys/use(_:)``): once the vault is locked
    /// it throws ``CofferError/Kind/locked`` before touching the file, and
    /// a lock waits for it, so nothing is ever sealed under a wiped key.
    ///
    /// With a session's listing cache, the write also appends what it
    /// changed in the listing (``ListingCache/Delta``), so the next `ls`
    /// serves the cache brought forward instead of reading every record
    /// (docs/key-hierarchy.md, "Listing cache deltas").
    ///
    /// A write that starts from a verified state of the file carries the
    /// integrity stamp forward to the state its commit makes
    /// (``IntegrityStamp``), so the next `sync` need not read every row.
    package func write<T>(_ body: (StoreConnection, VaultMAC) throws -> T) throws -> T {
        try keys.useAny {
            var delta: ListingCache.Delta?
            var carried: (from: FileState, mac: [UInt8])?
            let result = try store.writeImmediate { db in
                try checkKeyEpoch(db)
                let before = try listingCache == nil ? nil : Queries.listingStamp(db)
                let file = try Queries.fileState(db, path: store.path)
                if before != nil { listingWrites.begin() }
                defer { if before != nil { _ = listingWrites.end() } }
                let mac = VaultMAC(key: keys.mac)
                let result = try body(db, mac)
                try Queries.commitMAC(db, mac)
                if let before { delta = try? listingDelta(db, from: before, touched: listingWrites.end()) }
                // Verified before this write (by the stamp, or by a full
                // check inside `body`): the state after it is too.
                if let file, integrityStamp.vouches(for: file, vault: vaultID, key: keys.integrityStamp), let stored = try Queries.storedMAC(db) {
                    carried = (file, stored)
                }
                return result
            }
            if let delta, let listingCache { listingCache.append(delta, vault: vaultID, key: keys.listing) }
            if let carried, carried.mac != carried.from.mac,
                let after = store.fileStateAfterCommit(expectedCounter: carried.from.changeCounter &+ 1, mac: carried.mac)
            {
                integrityStamp.record(after, vault: vaultID, key: keys.integrityStamp)
            }
            return result
        }
    }

    /// What this write changed in the listing, from the state `from` to
    /// the one its commit makes: the vault MAC it just stored and SQLite's
    /// change counter one higher (a commit increments it once). Nil when
    /// there is nothing to say or too much (``ListingCache/maxDeltaItems``).
    /// A wrong guess of the new state costs nothing but speed: no listing
    /// state will match it, and the next listing reads every record.
    func listingDelta(_ db: StoreConnection, from: ListingStamp, touched: Set<ItemID>?) throws -> ListingCache.Delta? {
        guard let touched, touched.count <= ListingCache.maxDeltaItems, let mac = try Queries.storedMAC(db), mac != from.mac else { return nil }
        var delta = ListingCache.Delta(from: from, to: ListingStamp(mac: mac, changeCounter: from.changeCounter &+ 1), upserts: [], removed: [])
        try keys.record.keepingReadable {
            for listed in try Queries.listedItems(db, ids: Array(touched)) {
                if let summary = try listingSummary(listed) { delta.upserts.append(summary) } else { delta.removed.append(listed.row.id) }
            }
        }
        return delta
    }

    /// The listing's summary of one item from its sealed record, checked
    /// against its row; nil for a deleted item.
    func listingSummary(_ l: Queries.ListedItem) throws -> ItemSummary? {
        let record = try openRecord(l.record, item: l.row.id, withVersions: false)
        try check(record, row: l.row)
        if record.isDeleted { return nil }
        return ItemSummary(
            id: l.row.id, name: record.name, type: ItemType(rawValue: record.type) ?? .custom, tags: record.tags,
            source: record.source, expires: record.expires.flatMap(Day.init), policy: record.policy,
            hasConflict: record.hasConflict, updatedAt: Clock.date(record.updatedAt),
            username: record.username, url: record.url)
    }

    /// Stores an item's new state with a fresh record (MAC kept).
    package func save(_ db: StoreConnection, row: ItemRow, old: ItemState?, new: ItemState, now: Int64, mac: VaultMAC, shown: [RegisterID: FieldPayload] = [:])
        throws
    {
        let record = try sealRecord(state: new, row: row, shown: shown)
        try Queries.saveItem(db, row: row, record: record, old: old, new: new, now: now, mac: mac)
    }

    // MARK: Format upgrades

    /// Brings the integrity data of a vault made by an older format up to
    /// date on unlock (the migrations cannot: they have no key), in one
    /// transaction, and marks the header with the current format, which
    /// the MAC covers:
    /// - format 1 (no MAC): builds every item record and the whole MAC;
    /// - formats 2 to 5: folds the stored MAC from the old rules to the
    ///   current ones (``Queries/foldStoredMAC(_:expected:fresh:)``: an
    ///   edit made before the upgrade is still detected). Format 4 added
    ///   sync's bookkeeping and the per-area MACs, format 5 the key epoch
    ///   table (no term until a `coffer rekey`), format 6 one term per item
    ///   with its current versions in place of one per version.
    /// A vault of format 2 or later without its MAC, or of format 4 or
    /// later without its per-area MACs, is refused: coffer never removes
    /// them. A vault without integrity data is built its integrity data
    /// only when `rebuild` says so: it was unlocked with the passphrase and
    /// its master key opened under the legacy wrapping (a key wrapped with
    /// `coffer-wrap-v3` says the vault has had integrity data, and the
    /// caller refuses it). Costs one read when there is nothing to do.
    func ensureIntegrity(rebuild: Bool) throws {
        let present = try store.readDirect { db in (try Queries.storedMAC(db) != nil, try Queries.header(db).formatVersion) }
        if present.0 && present.1 >= VaultStore.integrityFormat { return }
        guard present.0 || present.1 < 2 else {
            throw StoreError.damaged("the vault MAC is missing from a format-\(present.1) vault")
        }
        guard present.0 || rebuild else {
            throw CofferError(
                .locked, "\(path) has no integrity data (a vault made before format 2, or one whose integrity data was removed outside coffer)",
                hint: "unlock it once with the passphrase, not a session: coffer then tells which it is")
        }
        try store.writeImmediate { db in
            var header = try Queries.header(db)
            let hasMAC = try Queries.storedMAC(db) != nil
            if hasMAC && header.formatVersion >= VaultStore.integrityFormat { return }
            let oldFormat = header.formatVersion
            header.formatVersion = VaultStore.integrityFormat
            if hasMAC {
                if oldFormat >= 4, try Queries.storedAreaMACs(db) == nil {
                    throw StoreError.damaged("the vault MAC's per-area parts are missing from a format-\(oldFormat) vault")
                }
                let expected = VaultMAC(key: keys.mac)
                try Queries.computeMAC(db, into: expected, rules: .format5(bookkeeping: oldFormat >= 4))
                try Queries.setFormatVersion(db, header.formatVersion)
                let fresh = VaultMAC(key: keys.mac)
                try Queries.computeMAC(db, into: fresh)
                try Queries.foldStoredMAC(db, expected: expected, fresh: fresh)
                return
            }
            try Queries.setFormatVersion(db, header.formatVersion)
            try keys.item.keepingReadable {
                try keys.record.keepingReadable {
                    for listed in try Queries.listedItems(db) {
                        let state = try Queries.cachedItemState(db, id: listed.row.id)
                        let record = try sealRecord(state: state, row: listed.row)
                        try Queries.replaceItemRecord(db, id: listed.row.id, record: record)
                    }
                }
            }
            let mac = VaultMAC(key: keys.mac)
            try Queries.computeMAC(db, into: mac)
            try Queries.setStoredMAC(db, mac)
        }
    }

    /// Upgrades a legacy wrapping of the master key to `coffer-wrap-v3`
    /// (vault format 7) with the KEK the passphrase unlock just derived:
    /// same salt and KDF parameters, a fresh nonce; the header's format
    /// number and wrapped key change in one write, the vault MAC in step.
    /// From then on the key says that this vault has integrity data.
    func bindWrapping(_ unwrapped: KeyHierarchy.Unwrapped) throws {
        try write { db, mac in
            var header = try Queries.header(db)
            guard header.formatVersion < VaultStore.boundWrapFormat, header.wrappedMasterKey == file.header.wrappedMasterKey else { return }
            header.wrappedMasterKey = KeyHierarchy.rewrapMasterKey(
                unwrapped, vault: header.vaultID, kdf: file.kdf, salt: header.kdfSalt, epoch: file.keyEpoch, binding: .integrity)
            // The file is of the current format from here: its schema was
            // migrated when it was opened, its integrity data is current
            // and its key is bound.
            header.formatVersion = VaultStore.formatVersion
            try Queries.updateHeaderWrapping(db, header: header, mac: mac)
        }
    }

    // MARK: Checking the whole vault

    /// Recomputes the vault MAC and compares it with the stored one
    /// (`export`, `import`, `sync` call this inside their transaction,
    /// before they write anything), unless the file is in a state whose
    /// MAC was verified already (``IntegrityStamp``); a state verified here
    /// is recorded.
    func checkVaultMAC(_ db: StoreConnection) throws {
        try checkKeyEpoch(db)
        let state = try Queries.fileState(db, path: store.path)
        if let state, integrityStamp.vouches(for: state, vault: vaultID, key: keys.integrityStamp) { return }
        try checkWholeVaultMAC(db)
        // Nothing wrote to the file while the rows were read (this
        // transaction's lock keeps other writers out; this connection has
        // not written yet).
        if let state, try Queries.fileState(db, path: store.path) == state {
            integrityStamp.record(state, vault: vaultID, key: keys.integrityStamp)
        }
    }

    /// The whole-vault check itself: every row read and hashed.
    func checkWholeVaultMAC(_ db: StoreConnection) throws {
        integrityStamp.countFullCheck()
        guard let stored = try Queries.storedMAC(db), let areas = try Queries.storedAreaMACs(db) else {
            throw StoreError.damaged("the vault MAC is missing")
        }
        let mac = VaultMAC(key: keys.mac)
        try Queries.computeMAC(db, into: mac)
        let changed = Self.macMismatches(computed: mac, whole: stored, areas: areas)
        guard changed.isEmpty else {
            throw StoreError.damaged("the vault MAC does not match its rows: \(changed.joined(separator: "; "))")
        }
    }

    /// Refuses to go on when another process rotated the master key since
    /// this vault was unlocked (its keys would write what the new key
    /// cannot read).
    func checkKeyEpoch(_ db: StoreConnection) throws {
        let stored = try Queries.keyEpoch(db).epoch
        guard stored == file.keyEpoch else {
            throw CofferError(
                .locked, "the master key of \(path) was rotated (key epoch \(stored.number)) after this vault was unlocked",
                hint: "unlock again with the passphrase")
        }
    }

    /// What differs between a MAC computed from the rows and the stored
    /// one, one phrase per changed area ("… were added, removed or
    /// changed outside coffer"); empty when both match. A whole MAC that differs while
    /// every area matches was changed before the vault's upgrade to
    /// format 4 (the areas were computed then from the rows as they were).
    static func macMismatches(computed: VaultMAC, whole: [UInt8], areas: [UInt8]) -> [String] {
        var out: [String] = []
        for area in VaultMAC.Area.allCases {
            let range = area.rawValue * VaultMAC.length..<(area.rawValue + 1) * VaultMAC.length
            if !constantTimeEqual(computed.area(area), Array(areas[range])) {
                out.append("\(area.rows) were added, removed or changed outside coffer")
            }
        }
        if out.isEmpty && !constantTimeEqual(computed.delta, whole) {
            out.append("rows were changed outside coffer before this vault was upgraded to format \(VaultStore.integrityFormat) (which ones cannot be told)")
        }
        return out
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    package func verify() throws(CofferError) -> VerifyReport {
        try CofferError.wrap {
            try store.read { db in
                var report = VerifyReport()
                let header = try Queries.header(db)
                report.formatVersion = header.formatVersion
                if let stored = try Queries.storedMAC(db) {
                    let mac = VaultMAC(key: keys.mac)
                    let cover = try Queries.computeMAC(db, into: mac)
                    report.replicas = cover.replicas
                    report.versions = cover.versions
                    report.historyVersions = cover.history
                    if let areas = try Queries.storedAreaMACs(db) {
                        for phrase in Self.macMismatches(computed: mac, whole: stored, areas: areas) {
                            report.problems.append(
                                VerifyReport.Problem(check: .vaultMAC, item: nil, message: "the vault MAC does not match: \(phrase)"))
                        }
                    } else {
                        report.problems.append(VerifyReport.Problem(check: .vaultMAC, item: nil, message: "the vault MAC's per-area parts are missing"))
                        if !Self.constantTimeEqual(mac.delta, stored) {
                            report.problems.append(
                                VerifyReport.Problem(
                                    check: .vaultMAC, item: nil,
                                    message:
                                        "the vault MAC does not match: rows of the header, the replica table, items, versions, history or sync's bookkeeping were added, removed or changed outside coffer"
                                ))
                        }
                    }
                } else {
                    report.problems.append(VerifyReport.Problem(check: .vaultMAC, item: nil, message: "the vault MAC is missing"))
                }
                for message in try Queries.schemaProblems(db) {
                    report.problems.append(VerifyReport.Problem(check: .schema, item: nil, message: message))
                }
                try keys.item.keepingReadable {
                    for listed in try Queries.listedItems(db) {
                        let id = listed.row.id
                        report.items += 1
                        func problem(_ check: VerifyReport.Check, _ message: String) {
                            report.problems.append(VerifyReport.Problem(check: check, item: id, message: message))
                        }
                        let state: ItemState
                        do { state = try Queries.cachedItemState(db, id: id) } catch let e as StoreError {
                            problem(.versions, "its versions cannot be read (\(CofferError.from(e).message))")
                            continue
                        }
                        var authentic = true
                        for (rid, versions) in state.registers {
                            for v in versions {
                                do { _ = try open(v, item: id, register: rid) } catch {
                                    authentic = false
                                }
                            }
                        }
                        if !authentic { problem(.versions, "a current version fails authentication (changed or moved from another item or vault)") }
                        do {
                            for (rid, v, _) in try Queries.history(db, item: id) {
                                do { _ = try open(v, item: id, register: rid) } catch {
                                    problem(.history, "a history version fails authentication")
                                    break
                                }
                            }
                        } catch let e as StoreError {
                            problem(.history, "its history cannot be read (\(CofferError.from(e).message))")
                        }
                        let record: ItemRecord
                        do { record = try openRecord(listed.record, item: id) } catch let e as StoreError {
                            problem(.record, CofferError.from(e).message)
                            continue
                        }
                        do { try check(record, row: listed.row, state: state) } catch let e as StoreError {
                            problem(.record, CofferError.from(e).message)
                        }
                        let expectedHash = record.isDeleted || record.name.isEmpty ? nil : KeyHierarchy.nameHash(record.name, nameKey: keys.nameIndex)
                        if !record.isDeleted, listed.row.nameHash != expectedHash {
                            problem(.nameIndex, "its name-index hash is not the hash of its name (swapped or changed)")
                        }
                    }
                }
                return report
            }
        }
    }
}

/// What ``Vault/verify()`` found. `problems` is empty for a sound vault.
public struct VerifyReport: Sendable, Equatable {
    public enum Check: String, Sendable, Equatable, CaseIterable {
        /// The vault-wide MAC over the header, replicas, items and versions.
        case vaultMAC = "vault-mac"
        /// An item's integrity record.
        case record
        /// The name index (an item's name hash).
        case nameIndex = "name-index"
        /// An item's current versions.
        case versions
        /// An item's history versions.
        case history
        /// The file's schema objects and journal mode: a trigger, a view, an
        /// index or table coffer never creates, a changed definition, WAL.
        case schema
    }

    public struct Problem: Sendable, Equatable {
        public var check: Check
        /// The item concerned, nil for vault-wide checks.
        public var item: ItemID?
        /// One line, never a value.
        public var message: String
    }

    public var formatVersion = 0
    public var items = 0
    public var versions = 0
    public var historyVersions = 0
    public var replicas = 0
    public var problems: [Problem] = []

    public var isSound: Bool { problems.isEmpty }
}
