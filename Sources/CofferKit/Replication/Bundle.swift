import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What an export wrote.
public struct ExportReport: Sendable, Equatable {
    public var path: String
    public var kind: BundleHeader.Kind
    /// Item records written.
    public var items: UInt64
    /// Size of the bundle file.
    public var bytes: Int
}

/// What importing one bundle did. Counts are of items.
public struct ImportReport: Sendable, Equatable {
    public var path: String
    public var kind: BundleHeader.Kind
    /// The replica that exported the bundle.
    public var exportingReplica: ReplicaID
    /// Item records read.
    public var records: Int = 0
    /// Items this vault did not hold before.
    public var added: Int = 0
    /// For a clone: the items `coffer ls` of the new vault lists (live,
    /// not the vault's own reserved ones); nil for an import.
    public var listedItems: Int?
    /// Added items that `coffer ls` lists (see ``listedItems``).
    var addedListed = 0
    /// Items that gained at least one version.
    public var changed: Int = 0
    /// Items whose merge changed nothing (already seen).
    public var unchanged: Int = 0
    /// Items that had no conflict before the import and have one now.
    public var conflictsOpened: Int = 0
    /// Field versions stored (new, not superseded by what was held).
    public var versionsAdded: Int = 0
    /// Ids of the added and changed items, in bundle order.
    public var touchedItems: [ItemID] = []
    /// A passphrase change the bundle brought (docs/sync.md §Passphrase
    /// changes); nil when the vault's wrapping stayed as it was.
    public var passphraseChange: PassphraseChange?
    /// The bundle showed this file to be a restored backup: it took a new
    /// replica id before merging (docs/sync.md, "Restored vault files").
    public var rebinding: ReplicaRebinding?
    /// The member who signed the bundle (format 6); nil for an unsigned one.
    public var signedBy: String?
    /// Versions of other members' replicas the bundle carried and the
    /// import left out (rule `forwarded-dot`: they arrive from their
    /// writer's own files), by member name ("" for a replica bound to no
    /// member), in name order.
    public var skippedForwarded: [SkippedForwarded] = []
}

/// Versions of one member's replicas an import left out (rule
/// `forwarded-dot`).
public struct SkippedForwarded: Sendable, Equatable {
    /// The member's name; nil for replicas bound to no member.
    public var member: String?
    public var versions: Int
}

/// Called during an import with the records read so far and the total
/// the header announces (nil when unknown).
public typealias ImportProgress = (_ records: Int, _ total: UInt64?) -> Void

/// The clear header of a bundle file, readable without a passphrase.
public struct BundleInfo: Sendable, Equatable {
    public var path: String
    public var formatVersion: Int
    public var header: BundleHeader
    public var fileSize: Int
}

extension CofferError {
    /// The message for a bundle that cannot be read.
    static func bundle(_ e: BundleError, path: String) -> CofferError {
        switch e {
        case .empty:
            return CofferError(.badData, "\(path) is empty, not a Coffer bundle", hint: "the export or the copy failed; export the bundle again")
        case .notABundle(let looksLike):
            let what = looksLike.map { "it looks like \($0)" } ?? "unrecognized data"
            return CofferError(.badData, "\(path) is not a Coffer bundle (\(what))", remedy: .init(.giveBundle, "give a bundle file", path: path))
        case .unsupportedVersion(let v):
            if v > BundleFormat.version {
                return CofferError(
                    .badData, "\(path) has bundle format \(v); this coffer reads format \(BundleFormat.version)",
                    hint: "upgrade coffer on this machine")
            }
            return CofferError(.badData, "\(path) declares bundle format \(v), which does not exist", hint: "the file is damaged; export the bundle again")
        case .truncated(let part):
            return CofferError(.badData, "\(path) is truncated (its \(part) ends early)", hint: "the copy was cut short; copy or export the bundle again")
        case .malformedHeader(let why):
            return CofferError(.badData, "\(path) has a malformed bundle header: \(why)", hint: "the file is damaged; export the bundle again")
        case .authenticationFailed:
            return CofferError(
                .badData, "\(path) is corrupted or was modified (it fails authentication)", hint: "copy or export the bundle again; nothing was imported")
        case .malformedRecord(let why):
            return CofferError(.badData, "\(path) is malformed: \(why)", hint: "the exporting coffer has a bug or the file is damaged; nothing was imported")
        case .trailingData:
            return CofferError(
                .badData, "\(path) has data after the end of the bundle", hint: "the file is damaged or two files were joined; export the bundle again")
        case .ruleBroken(let rule, let why):
            return CofferError(
                .badData, "\(path) breaks the bundle rule \(rule.rawValue) (\(rule.summary)): \(why)",
                hint: "the exporting replica is buggy or hostile; nothing was imported (docs/bundle-format.md, \"Validation rules\")")
        case .io(let why):
            return CofferError(.fileNotFound, "cannot read \(path): \(why)")
        }
    }
}

extension Replication {
    // MARK: Inspect

    package static func inspectBundle(at path: String) throws(CofferError) -> BundleInfo {
        let input = try BundleFileInput(path: path)
        let header: BundleHeader
        do { header = try BundleHeader.read(from: input).header } catch { throw .bundle(error, path: path) }
        var st = stat()
        stat(path, &st)
        return BundleInfo(path: path, formatVersion: Int(header.formatVersion), header: header, fileSize: Int(st.st_size))
    }

    // MARK: Summary

    package func summaryFile() throws(CofferError) -> BundleSummaryFile {
        try CofferError.wrap {
            try store.read { db in
                BundleSummaryFile(
                    vaultID: vaultID, replicaID: try Queries.localReplica(db).id, createdAt: Clock.nowMillis(),
                    vector: try Queries.summary(db))
            }
        }
    }

    package func writeSummary(to path: String) throws(CofferError) {
        let s = try summaryFile()
        let out = try AtomicFileOutput(path: path)
        do { try out.writeBytes(s.encoded) } catch { throw out.error("\(error)") }
        try out.commit()
    }

    package func readSummary(at path: String) throws(CofferError) -> BundleSummaryFile {
        let input = try BundleFileInput(path: path)
        let bytes: [UInt8]
        do { bytes = try input.readBytes(BundleSummaryFile.maxLength + 1) } catch { throw .bundle(error, path: path) }
        let summary: BundleSummaryFile
        do { summary = try BundleSummaryFile(decoding: bytes) } catch {
            switch error {
            case .notABundle(let like):
                throw CofferError(
                    .badData, "\(path) is not a Coffer summary file (\(like.map { "it looks like \($0)" } ?? "unrecognized data"))",
                    remedy: .init(.writeSummary, "write one on the receiving machine"))
            case .unsupportedVersion(let v):
                throw CofferError(.badData, "\(path) has summary format \(v); this coffer reads format \(BundleFormat.summaryVersion)", hint: "upgrade coffer")
            case .empty:
                throw CofferError(.badData, "\(path) is empty, not a summary file", remedy: .init(.writeSummary, "write one on the receiving machine"))
            case .ruleBroken(let rule, let why):
                throw CofferError(
                    .badData, "\(path) breaks the summary rule \(rule.rawValue) (\(rule.summary)): \(why)",
                    remedy: .init(.writeSummaryAgain, "write it again on the receiving machine"))
            default:
                throw CofferError(.badData, "\(path) is a damaged summary file", remedy: .init(.writeSummaryAgain, "write it again on the receiving machine"))
            }
        }
        guard summary.vaultID == vaultID else {
            throw CofferError(
                .badData, "\(path) is the summary of another vault (vault id \(summary.vaultID.hex.prefix(8))…, this vault is \(vaultID.hex.prefix(8))…)",
                hint: "use a summary written by a replica of this vault")
        }
        return summary
    }

    // MARK: Export

    @discardableResult
    package func exportBundle(to path: String, since: VersionVector? = nil) throws(CofferError) -> ExportReport {
        try exportBundle(to: path, since: since, streamHeader: nil, createdAt: nil)
    }

    /// `verified`: the caller (a sync) checked the vault MAC itself
    /// earlier in this process, and only this process's own writes came
    /// after; the whole-vault check is not made a second time.
    func exportBundle(
        to path: String, since: VersionVector?, streamHeader: [UInt8]?, createdAt: Int64?, verified: Bool = false
    ) throws(CofferError) -> ExportReport {
        // A shared vault's members (docs/sharing.md): the master key is
        // sealed to each of them in the header (format 5).
        let members = try sharing.membership(validating: false).members
        guard members.count <= BundleFormat.maxSealedKeys else {
            throw CofferError(
                .badData, "the vault has \(members.count) members, more than a bundle can seal its key to (\(BundleFormat.maxSealedKeys))",
                hint: "remove members until at most \(BundleFormat.maxSealedKeys) remain")
        }
        // A member's replica signs what it publishes (format 6,
        // docs/sharing.md "Signed writes"); the counter is reserved first.
        let signer = try publicationSigner(members: members)
        let out = try AtomicFileOutput(path: path)
        var exported: (ReplicaID, UInt64)?
        let report: ExportReport = try CofferError.wrap {
            try store.read { db in
                // Nothing leaves a vault whose file was edited outside
                // coffer (a changed policy would export a local-only item).
                if verified { try core.checkKeyEpoch(db) } else { try checkVaultMAC(db) }
                // The wrapping as stored now: an import earlier in this
                // process (sync) may have adopted another replica's.
                let h = try Queries.header(db)
                let me = try Queries.localReplica(db)
                exported = (me.id, me.counter)
                let count = try Queries.exportItemCount(db, since: since)
                var header = BundleHeader(
                    vaultID: vaultID, replicaID: try Queries.localReplica(db).id, kind: since == nil ? .full : .delta,
                    createdAt: createdAt ?? Clock.nowMillis(), recordCount: count,
                    kdf: KDFParameters(memoryKiB: h.kdfMemoryKiB, iterations: h.kdfIterations, parallelism: h.kdfParallelism),
                    salt: h.kdfSalt, wrappedMasterKey: h.wrappedMasterKey,
                    summary: try Replication.exportableSummary(db), since: since ?? VersionVector(),
                    wrapping: try Queries.keyWrapping(db), keyEpoch: try Queries.keyEpoch(db).epoch, wrapBinding: h.wrapBinding)
                if !members.isEmpty && h.wrapBinding == .integrity {
                    let prefix = KeyHierarchy.sealPrefix(vault: vaultID, epoch: header.keyEpoch)
                    let boxes = MemberPublicKey.seal(keys.master, prefix: prefix, toEach: members.map(\.publicKey))
                    var sealed: [[UInt8]] = []
                    for (m, box) in zip(members, boxes) {
                        guard let box else {
                            throw CofferError(
                                .badData,
                                "the identity of the member '\(m.name)' is unusable: its encryption key is a weak (low-order) point",
                                hint: "remove that member and add them again with a valid identity")
                        }
                        sealed.append(box)
                    }
                    header.sealedKeys = sealed.sorted { $0.lexicographicallyPrecedes($1) }
                    if let (key, counter) = signer {
                        header.publisher = key.publicKey.signKey
                        header.publication = counter
                    }
                }
                do {
                    let writer = try BundleWriter(
                        header: header, bundleKey: keys.bundle, output: out, streamHeader: streamHeader,
                        signer: header.publisher == nil ? nil : signer?.0)
                    // Rows come in bundle order: each goes straight into
                    // the chunk buffer.
                    var current: ItemID?
                    try Queries.forEachExportVersion(db, since: since) { v in
                        if v.item != current {
                            if current != nil { try writer.endItem() }
                            writer.beginItem(v.item)
                            current = v.item
                        }
                        writer.appendVersion(
                            register: v.register, replica: v.replica, counter: v.counter, vector: v.vector,
                            writtenAt: v.writtenAt, isTombstone: v.isTombstone, payload: v.payload)
                    }
                    if current != nil { try writer.endItem() }
                    try writer.finish()
                    guard writer.recordsWritten == count else {
                        throw CofferError(.internalError, "the vault changed during export; try again")
                    }
                    return ExportReport(path: path, kind: header.kind, items: count, bytes: writer.bytesWritten)
                } catch let e as BundleError {
                    throw out.error("\(e)")
                }
            }
        }
        try out.commit()
        if let (id, counter) = exported { identity.noteExported(replica: id, counter: counter) }
        return report
    }

    // MARK: Import

    @discardableResult
    package func importBundle(at path: String, progress: ImportProgress? = nil) throws(CofferError) -> ImportReport {
        let (input, header, prefix) = try openOwnBundle(
            at: path,
            remedy: .init(.importIntoReplica, "import bundles only into replicas of the vault that wrote them; cloning makes a new replica from a bundle"))
        // A bundle of another key epoch is refused before its stream is
        // read: an older one whole (its writer adopts the new key first and
        // writes its edits again), a newer one until its key is adopted
        // with the passphrase (docs/sync.md §Master-key rotation).
        switch keyRotation.keyEpochStatus(of: header) {
        case .same: break
        case .older(let e): throw KeyRotation.olderEpochError(path: path, bundle: e, vault: keyRotation.keyEpoch)
        case .newer(let e): throw KeyRotation.newerEpochError(path: path, bundle: e, vault: keyRotation.keyEpoch)
        }
        let reader: BundleReader
        do { reader = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: keys.bundle) } catch {
            throw .bundle(error, path: path)
        }
        // A bundle that saw more of this replica id than this file ever
        // exported shows a restored backup (docs/sync.md): settled in the
        // import's own transaction, so a refused bundle changes nothing.
        let restore = try identity.restoreCheck(seen: header.summary[try items.replicaID()], bundles: [path])
        let probe = OwnClaimProbe()
        do {
            return try importRecords(from: reader, path: path, progress: progress, restore: restore, ownClaims: probe)
        } catch {
            // A version claimed writes of this replica id beyond any it
            // made and beyond what the exporter's summary says it saw (rule
            // local-replica-bound; a key holder's forged claim). Refusing
            // the bundle forked the vault for ever: every replica that took
            // the claim ignores this id's later writes, and this replica
            // refuses every bundle that carries it. Instead this file takes
            // a new replica id, moves its writes no bundle carried yet to
            // it (they stay beside the claiming version as conflict sides),
            // and merges the bundle, in one transaction; the claim is then
            // about a retired id (docs/threat-model.md, "A replica that
            // holds the key").
            guard let claim = probe.highest else { throw error }
            let (input, header, prefix) = try openOwnBundle(at: path)
            let again: BundleReader
            do { again = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: keys.bundle) } catch {
                throw .bundle(error, path: path)
            }
            let check = RestoreCheck(seen: max(claim, restore?.seen ?? 0), shared: restore?.shared ?? 0, claimedBy: header.replicaID)
            return try importRecords(from: again, path: path, progress: progress, restore: check)
        }
    }

    /// `integrity` is `.full` except for `coffer-bench clone`'s baselines
    /// (the cost of the integrity data): new items then get no MAC terms,
    /// or neither records nor MAC terms, and the vault is thrown away.
    func importRecords(
        from reader: BundleReader, path: String, progress: ImportProgress?, restore: RestoreCheck? = nil, integrity: BulkIntegrity = .full,
        ownClaims: OwnClaimProbe? = nil
    ) throws(CofferError) -> ImportReport {
        let header = reader.header
        // Names this replica's own versions in a signed import's report
        // (read before the import's transaction).
        let ownKey = header.publisher == nil ? nil : try ownSignKey()
        return try CofferError.wrap {
            try write { db, mac in
                try checkVaultMAC(db)
                let rebinding = try restore.flatMap { try identity.adopt(db, mac, $0) }
                if header.kind == .delta {
                    let summary = try Queries.summary(db)
                    guard header.since.isDominated(by: summary) else {
                        throw CofferError(
                            .badData, "\(path) is a delta bundle that assumes changes this vault has not seen",
                            remedy: .init(.importEarlierBundles, "import the bundles it depends on first, or ask for a full bundle"))
                    }
                }
                var report = ImportReport(path: path, kind: header.kind, exportingReplica: header.replicaID)
                report.rebinding = rebinding
                let now = Clock.nowMillis()
                let rules = try ReceiverRules(header: header, path: path, db: db, ownClaims: ownClaims)
                try rules.checkHeader(now: now)
                // Signed writes (docs/sharing.md): who may write into this
                // vault, checked before and after the merge, in its
                // transaction.
                let signed = try SignedImport(header: header, path: path, db: db, roster: try roster(db))
                // The bulk-write set-up (page cache, indexes built at the
                // end into an empty vault): Queries.bulkWrite.
                try Queries.bulkWrite(db) { empty in
                    // What this vault has already seen: a version whose dot it
                    // covers is held here or superseded by one held here, so
                    // merging it changes nothing (docs/sync.md, "Import").
                    let seen = try Queries.summary(db)
                    let inserter = NewItemInserter(db, mac: mac)
                    let decodeMAC = mac.sibling()
                    // Every record decrypts with the item key and hashes names
                    // with the name-index key: keep both readable meanwhile.
                    // The record key seals one record per item, the field-id key
                    // finds its username and url registers, the MAC key hashes
                    // every row: all kept readable too (no mprotect pair per use).
                    try keys.item.keepingReadable {
                        // The field-id key checks every user field's register
                        // id (rule register-name) and derives new items' ids.
                        try keys.record.keepingReadable {
                            try keys.fieldID.keepingReadable {
                                try mac.keepingReadable {
                                    try keys.nameIndex.keepingReadable {
                                        // Records are decoded (and new items authenticated)
                                        // on a second thread while this one writes.
                                        // Into an empty vault, that thread also builds the
                                        // INSERT statements; this one only runs them.
                                        let buffer = NewItemBuffer(mac: decodeMAC, integrity: integrity)
                                        // Seals the new items' records on the decoding
                                        // thread (nonces drawn 64 at a time).
                                        let sealer = AEAD.BatchSealer(key: keys.record)
                                        let pipeline = ImportPipeline(
                                            reader: reader, path: path,
                                            transform: { [self] incoming in
                                                try rules.check(record: incoming)
                                                let unseen = signed.filter(Self.unseenPart(of: incoming, seen: seen))
                                                if unseen.registers.isEmpty { return [.unchanged] }
                                                return empty
                                                    ? buffer.add(try prepareNew(unseen, path: path, sealing: integrity != .none, sealer: sealer))
                                                    : [.merge(unseen)]
                                            },
                                            atEnd: { buffer.finish() })
                                        pipeline.start()
                                        defer { pipeline.stop() }
                                        while let batch = try pipeline.nextBatch() {
                                            for record in batch {
                                                switch record {
                                                case .write(let statement):
                                                    try inserter.execute(statement)
                                                    continue
                                                case .unchanged:
                                                    report.unchanged += 1
                                                case .added(let id, let hasConflict, let versions, let listed):
                                                    report.added += 1
                                                    if listed { report.addedListed += 1 }
                                                    if hasConflict { report.conflictsOpened += 1 }
                                                    report.versionsAdded += versions
                                                    report.touchedItems.append(id)
                                                case .merge(let unseen):
                                                    try mergeIncoming(
                                                        unseen, db: db, inserter: inserter, report: &report, path: path, now: now, mac: mac, rules: rules)
                                                }
                                                report.records += 1
                                                if let progress, report.records % 1000 == 0 { progress(report.records, header.recordCount) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    try inserter.finish()
                    mac.absorb(decodeMAC)
                }
                // Claims for other replicas count only as far as the
                // records back them (docs/sync.md, "Hostile bundles").
                let recorded = signed.capped(BundleValidation.backedSummary(header: header, evidence: reader.evidence))
                try Queries.noteSeen(db, vector: recorded, at: now, mac: mac)
                report.signedBy = try signed.finish(db, mac: mac, roster: try roster(db), recorded: recorded)
                if header.publisher != nil {
                    let skips = signed.skips.all
                    if !skips.isEmpty {
                        let names = try replicaMembers(db, ownKey: ownKey)
                        var byMember: [String?: Int] = [:]
                        for (r, n) in skips { byMember[names[r], default: 0] += n }
                        report.skippedForwarded = byMember.map { SkippedForwarded(member: $0.key, versions: $0.value) }
                            .sorted { ($0.member ?? "") < ($1.member ?? "") }
                    }
                }
                report.passphraseChange = try resolveKeyWrapping(header, db: db, mac: mac)
                // If the bundle saw more of this replica's writes than this
                // file made (a restored backup, an undetected copy), the
                // summary now exceeds the local counter: the next write (or
                // `claimReplica`) takes a new replica id and says so
                // (Vault.rebindIfCopied, docs/sync.md).
                return report
            }
        }
    }

    /// Merges one item from a bundle into the database.
    func mergeIncoming(
        _ incoming: ItemState, db: StoreConnection, inserter: NewItemInserter, report: inout ImportReport, path: String, now: Int64, mac: VaultMAC,
        rules: ReceiverRules
    ) throws {
        guard let (oldRow, old, _) = try loadItem(db, id: incoming.id) else {
            return try insert(prepareNew(incoming, path: path), into: inserter, report: &report)
        }
        try rules.check(incoming: incoming, held: old)
        let merged = old.merged(with: incoming)
        if merged == old {
            report.unchanged += 1
            return
        }
        // Authenticate every version that will be stored under this
        // vault's item key, so nothing undecryptable enters the vault.
        var newVersions = 0
        var written: (min: Int64, max: Int64) = (.max, .min)
        for (rid, versions) in merged.registers {
            let held = old.registers[rid] ?? []
            for v in versions {
                written = (min(written.min, v.writtenAt), max(written.max, v.writtenAt))
                if let copy = held.first(where: { $0.dot == v.dot }) {
                    // The other copy of a write held here (picked by
                    // `Register.normalize`): it replaces the held row, so
                    // it is authenticated too.
                    if copy != v { _ = try openIncoming(v, item: incoming.id, register: rid, path: path) }
                    continue
                }
                newVersions += 1
                _ = try openIncoming(v, item: incoming.id, register: rid, path: path)
            }
        }
        let row = try derivedRow(
            for: merged, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: max(oldRow.updatedAt, written.max))
        try save(db, row: row, old: old, new: merged, now: now, mac: mac)
        report.changed += 1
        if row.hasConflict && !oldRow.hasConflict { report.conflictsOpened += 1 }
        report.versionsAdded += newVersions
        report.touchedItems.append(incoming.id)
    }

    /// The versions of `incoming` whose dots `seen` does not cover
    /// (`incoming` itself when none is covered, the usual case).
    static func unseenPart(of incoming: ItemState, seen: VersionVector) -> ItemState {
        var anySeen = false
        for versions in incoming.registers.values where versions.contains(where: { seen.contains($0.dot) }) {
            anySeen = true
            break
        }
        guard anySeen else { return incoming }
        var unseen = ItemState(id: incoming.id)
        for (rid, versions) in incoming.registers {
            let fresh = versions.filter { !seen.contains($0.dot) }
            if !fresh.isEmpty { unseen.registers[rid] = fresh }
        }
        return unseen
    }

    /// An item this vault does not hold, ready to store: ``mergeIncoming``
    /// without old state. Every version is authenticated, and the shown
    /// name, decrypted on the way, gives the name hash (one decryption per
    /// version in all). Touches no database (runs on the decoding thread).
    func prepareNew(_ incoming: ItemState, path: String, sealing: Bool = true, sealer: AEAD.BatchSealer? = nil) throws -> NewItem {
        var state = incoming
        for (rid, versions) in incoming.registers where versions.count > 1 {
            // Merging into nothing: drop versions another one superseded.
            state.registers[rid] = Register.normalize(versions)
        }
        let shownName = Register.shown(state.registers[.name] ?? [])
        var nameHash: [UInt8]?
        var written: (min: Int64, max: Int64) = (.max, .min)
        var versionCount = 0
        var name = ""
        // The record is gathered while the payloads are opened: the shown
        // payload of each listed register gives its text. Every version
        // passed rule register-name (openIncoming): a user field's
        // register is the one its payload's name derives, so the username
        // and url registers are found by name, without deriving their ids
        // (two keyed hashes per item).
        var content = ItemRecord.Content()
        if sealing { content.refs.reserveCapacity(state.registers.count + 2) }
        for (rid, versions) in state.registers {
            let shownDot = versions.count == 1 ? versions[0].dot : Register.shown(versions)?.dot
            let listed = rid.isMetadata ? ItemRecord.Content.Listed(metadata: rid) : nil
            for v in versions {
                written = (min(written.min, v.writtenAt), max(written.max, v.writtenAt))
                versionCount += 1
                let payload = try openIncoming(v, item: state.id, register: rid, path: path)
                if rid == .name, let shownName, !shownName.isTombstone, v.dot == shownName.dot {
                    name = payload.text
                    nameHash = KeyHierarchy.nameHash(name, nameKey: keys.nameIndex)
                }
                guard sealing else { continue }
                content.add(v, register: rid)
                if v.dot == shownDot, !v.isTombstone, let field = listed ?? (rid.isMetadata ? nil : ItemRecord.Content.Listed(field: payload.name)) {
                    content.list(field, payload)
                }
            }
        }
        let hasConflict = state.registers.contains { $0.key != .deleted && $0.value.count > 1 } || state.hasDeleteConflict
        let row = ItemRow(
            id: state.id, policy: .sync, nameHash: nameHash, isDeleted: state.isDeleted, hasConflict: hasConflict,
            createdAt: written.min, updatedAt: written.max)
        return NewItem(
            row: row, record: sealing ? seal(content, row: row, sealer: sealer) : [], state: state,
            versions: versionCount, listed: !state.isDeleted && !CredentialRequirements.isReserved(name))
    }

    /// Stores a prepared new item and counts it.
    func insert(_ item: NewItem, into inserter: NewItemInserter, report: inout ImportReport) throws {
        try inserter.add(row: item.row, record: item.record, state: item.state)
        report.added += 1
        if item.listed { report.addedListed += 1 }
        if item.row.hasConflict { report.conflictsOpened += 1 }
        report.versionsAdded += item.versions
        report.touchedItems.append(item.state.id)
    }

    // MARK: Clone

    package static func clone(
        bundleAt path: String, to vaultPath: String, passphrase: SecretBytes, allowExpensiveKDF: Bool = false,
        progress: ImportProgress? = nil, merging rest: CloneMerge? = nil
    ) throws(CofferError) -> ImportReport {
        try clone(
            bundleAt: path, to: vaultPath, passphrase: passphrase, allowExpensiveKDF: allowExpensiveKDF, progress: progress, integrity: .full, merging: rest)
    }

    /// ``clone(bundleAt:to:passphrase:allowExpensiveKDF:progress:)`` for
    /// `coffer-bench clone`: the same code without the vault-MAC terms
    /// (`mac` false), or without them and the item records (`records`
    /// false): vaults no coffer command accepts, the baselines of their cost
    /// in docs/benchmarks.md.
    package static func _cloneForBenchmarks(bundleAt path: String, to vaultPath: String, passphrase: SecretBytes, records: Bool, mac: Bool) throws(CofferError)
        -> ImportReport
    {
        let integrity: BulkIntegrity = !records ? .none : mac ? .full : .recordsOnly
        return try clone(bundleAt: path, to: vaultPath, passphrase: passphrase, allowExpensiveKDF: false, progress: nil, integrity: integrity)
    }

    /// What opens the bundle a clone starts from: the passphrase, or a
    /// member identity the bundle's key is sealed to (docs/sharing.md,
    /// "Member replicas").
    enum CloneKey {
        case passphrase(SecretBytes)
        case identity(MemberIdentity)
    }

    static func clone(
        bundleAt path: String, to vaultPath: String, passphrase: SecretBytes, allowExpensiveKDF: Bool,
        progress: ImportProgress?, integrity: BulkIntegrity, merging rest: CloneMerge? = nil
    ) throws(CofferError) -> ImportReport {
        try clone(
            bundleAt: path, to: vaultPath, key: .passphrase(passphrase), allowExpensiveKDF: allowExpensiveKDF, progress: progress, integrity: integrity,
            merging: rest)
    }

    static func clone(
        bundleAt path: String, to vaultPath: String, key cloneKey: CloneKey, allowExpensiveKDF: Bool,
        progress: ImportProgress?, integrity: BulkIntegrity, merging rest: CloneMerge? = nil
    ) throws(CofferError) -> ImportReport {
        NewVaultFile.sweepStale(for: vaultPath)
        if FileManager.default.fileExists(atPath: vaultPath) {
            throw CofferError(
                .vaultExists, "a file already exists at \(vaultPath)",
                remedy: .init(
                    .importIntoExistingVault, "choose another path for the vault, or import the bundle into that vault", path: path, vaultPath: vaultPath))
        }
        let input = try BundleFileInput(path: path)
        let (header, prefix): (BundleHeader, [UInt8])
        do { (header, prefix) = try BundleHeader.read(from: input) } catch { throw .bundle(error, path: path) }
        guard header.kind == .full else {
            throw CofferError(
                .badData, "\(path) is a delta bundle; a clone needs a full bundle",
                remedy: .init(.exportFullBundle, "export a full bundle on the exporting machine", path: path))
        }
        guard header.keyEpoch.number <= KeyEpoch.maxCloneNumber else {
            throw CofferError(
                .badData,
                "\(path) breaks the bundle rule key-epoch-jump (a clone starts from a key epoch of at most 2^52, so the vault keeps room for rekeys): it claims key epoch \(header.keyEpoch.number); nothing was created",
                hint: "a key holder forged it: clone from another machine's bundle")
        }
        let master: SecretBytes
        let wrappedKey: [UInt8]
        var identity: MemberIdentity?
        switch cloneKey {
        case .passphrase(let passphrase):
            if !allowExpensiveKDF { try checkCloneKDF(header.kdf, path: path) }
            let unwrapped: KeyHierarchy.Unwrapped
            do {
                unwrapped = try KeyHierarchy.unwrapMasterKey(
                    passphrase: passphrase, vault: header.vaultID, kdf: header.kdf, salt: header.salt, wrapped: header.wrappedMasterKey,
                    epoch: header.keyEpoch, bindings: [header.wrapBinding])
            } catch .authenticationFailed {
                throw CofferError(.wrongPassphrase, "wrong passphrase for the bundle \(path)", hint: "use the passphrase of the vault that exported it")
            } catch {
                throw CofferError(.badData, "cannot unlock the bundle \(path): \(error)")
            }
            master = unwrapped.master
            // The clone is a format-7 vault: a bundle of an older build
            // carries a legacy wrapping, bound here under the same KEK and salt
            // (its version, and so the passphrase, stay the bundle's).
            wrappedKey =
                header.wrapBinding == .integrity
                ? header.wrappedMasterKey
                : KeyHierarchy.rewrapMasterKey(
                    unwrapped, vault: header.vaultID, kdf: header.kdf, salt: header.salt, epoch: header.keyEpoch, binding: .integrity)
        case .identity(let member):
            // No Argon2id run: the key sealed to the identity. The
            // passphrase wrapping is kept as received (this replica
            // forwards it to others and can never open it).
            var sealed: SecretBytes?
            do { sealed = try header.openSealedKey(with: member.secretKey) } catch { throw .bundle(error, path: path) }
            if sealed == nil, let rest {
                sealed = epochKey(sealedTo: member, opening: path, header: header, among: rest.bundles)
            }
            guard let sealed else { throw Replication.notSealedError(path: path) }
            master = sealed
            wrappedKey = header.wrappedMasterKey
            identity = member
        }
        let reader: BundleReader
        do { reader = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master)) } catch {
            throw .bundle(error, path: path)
        }
        // Built under a temporary name, linked into place when complete
        // (NewVaultFile): a killed clone leaves no vault at `vaultPath`.
        return try NewVaultFile.build(at: vaultPath, kind: "clone") { (tempPath: String) throws(CofferError) in
            try cloneInto(
                tempPath: tempPath, header: header, master: master, wrappedKey: wrappedKey, reader: reader, path: path, progress: progress,
                integrity: integrity, identity: identity,
                merging: rest)
        }
    }

    private static func cloneInto(
        tempPath: String, header: BundleHeader, master: SecretBytes, wrappedKey: [UInt8], reader: BundleReader, path: String, progress: ImportProgress?,
        integrity: BulkIntegrity, identity: MemberIdentity? = nil, merging rest: CloneMerge?
    ) throws(CofferError) -> ImportReport {
        let vaultHeader = VaultHeader(
            formatVersion: VaultStore.formatVersion, vaultID: header.vaultID, kdfMemoryKiB: header.kdf.memoryKiB,
            kdfIterations: header.kdf.iterations, kdfParallelism: header.kdf.parallelism, kdfSalt: header.salt,
            wrappedMasterKey: wrappedKey, createdAt: Clock.nowMillis())
        let vault: Vault = try CofferError.wrap {
            let store = try VaultStore.create(
                path: tempPath, header: vaultHeader, replica: .random(), host: MachineIdentity.host,
                mac: VaultMAC(key: KeyHierarchy.subKey(.vaultMAC, of: master)))
            if !header.keyEpoch.isInitial {
                // The clone starts on the bundle's key epoch (its key
                // check and MAC term in the first transaction after
                // creation; the header's wrapping is the epoch's).
                let check = KeyHierarchy.keyCheck(master: master, vault: header.vaultID, epoch: header.keyEpoch)
                try store.writeImmediate { db in
                    try Queries.setKeyEpoch(db, header.keyEpoch, check: check)
                    let mac = VaultMAC(key: KeyHierarchy.subKey(.vaultMAC, of: master))
                    mac.toggle(IntegrityTerm.keyEpoch(header.keyEpoch, check: check))
                    try Queries.commitMAC(db, mac)
                }
            }
            let epoch = try store.read { db in try Queries.keyEpoch(db) }
            return try Vault(file: VaultFile(path: tempPath, store: store, header: vaultHeader, keyEpoch: epoch.epoch, keyCheck: epoch.check), master: master)
        }
        // The identity that cloned unlocks this file (vault format 8).
        if let identity { try vault.sharing.allowUnlock(by: identity.publicKey) }
        var report = try vault.replication.importRecords(from: reader, path: path, progress: progress, integrity: integrity)
        // What `coffer ls` of the new vault will show (deleted items and
        // the vault's own reserved items are records, not items to list).
        // Counted on the way in: the vault held nothing before, so every
        // item is one the import added (no second pass over the vault).
        report.listedItems = report.addedListed
        // The other files (`clone DIR`), merged by this same vault before
        // it is linked into place: no second unlock, and the vault MAC
        // verified once (its integrity stamp follows each merge).
        // A file refused for want of a later one is tried again after a
        // pass that merged something, as `sync` does (docs/sync.md).
        if let rest {
            let refused = try Replication.mergeRetrying(rest.bundles) { b throws(CofferError) -> Replication.MergeOutcome in
                if (try? vault.bringsNothing(b.header)) == true {
                    rest.merged(b, nil)
                    return .skipped
                }
                do throws(CofferError) {
                    rest.merged(b, .success(try vault.importBundle(at: b.path, progress: rest.progress(b.path))))
                    return .merged
                } catch {
                    return .refused(error)
                }
            }
            for (b, error) in refused { rest.merged(b, .failure(error)) }
        }
        return report
    }
}

/// The files a clone merges after the full bundle it starts from (`clone
/// DIR`: the folder's other snapshots and segments), each reported to
/// `merged` in turn: the merge's report, its error (the clone goes on), or
/// nil for a file that brings nothing the vault has not got.
public struct CloneMerge {
    public var bundles: [BundleInfo]
    public var progress: (String) -> ImportProgress?
    public var merged: (BundleInfo, Result<ImportReport, CofferError>?) -> Void

    public init(
        bundles: [BundleInfo], progress: @escaping (String) -> ImportProgress? = { _ in nil },
        merged: @escaping (BundleInfo, Result<ImportReport, CofferError>?) -> Void
    ) {
        self.bundles = bundles
        self.progress = progress
        self.merged = merged
    }
}

extension Replication {
    /// Opens the bundle at `path` and reads its header, refusing (exit 65)
    /// a bundle of another vault: what `import`, a dry run and a key
    /// adoption do first.
    func openOwnBundle(
        at path: String,
        remedy: CofferError.Remedy = .init(.importIntoReplica, "import bundles only into replicas of the vault that wrote them")
    ) throws(CofferError) -> (input: BundleFileInput, header: BundleHeader, prefix: [UInt8]) {
        let input = try BundleFileInput(path: path)
        let (header, prefix): (BundleHeader, [UInt8])
        do { (header, prefix) = try BundleHeader.read(from: input) } catch { throw .bundle(error, path: path) }
        guard header.vaultID == vaultID else {
            throw CofferError(
                .badData,
                "\(path) belongs to another vault (vault id \(header.vaultID.hex.prefix(8))…, this vault is \(vaultID.hex.prefix(8))…)",
                remedy: remedy)
        }
        return (input, header, prefix)
    }
}

extension Replication {
    /// The refusal of a bundle whose key no box opens with the identity.
    /// A member added after the newest full bundle was written finds no
    /// box in it, but every later bundle of the same key epoch (a segment
    /// the adding member published) seals that epoch's key to it: the key
    /// of the first such box that authenticates the full bundle at `path`
    /// (a box anyone could have sealed to this identity, in a file nobody
    /// vouches for, is tried on the full bundle before it is used).
    static func epochKey(sealedTo member: MemberIdentity, opening path: String, header: BundleHeader, among bundles: [BundleInfo]) -> SecretBytes? {
        for b in bundles where b.header.vaultID == header.vaultID && b.header.keyEpoch == header.keyEpoch {
            guard let key = (try? b.header.openSealedKey(with: member.secretKey)) ?? nil else { continue }
            guard let input = try? BundleFileInput(path: path), let (h, prefix) = try? BundleHeader.read(from: input) else { return nil }
            if (try? BundleReader(header: h, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: key))) != nil {
                return key
            }
        }
        return nil
    }

    static func notSealedError(path: String) -> CofferError {
        CofferError(
            .wrongPassphrase,
            "this bundle's key is not sealed to your identity (you are not a member, or were removed: ask a member to add you)",
            remedy: .init(.askToBeAdded, "give a member your public identity to add to the vault, then clone or sync from their next bundle", path: path))
    }
}
