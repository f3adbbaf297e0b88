import CofferCrypto
import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif
/// Replication: exporting and importing bundles, syncing a folder or a git
/// repository, cloning, the passphrase wrapping and clock checks that
/// travel with bundles (docs/sync.md, docs/bundle-format.md). The façade's
/// forwarders are in Replication/Vault+Replication.swift.
package struct Replication: VaultComponent {
    package let core: VaultCore
}

// MARK: - Merge preview (--dry-run)

/// What merging would change, item by item and field by field.
public struct MergePreview: Sendable, Equatable {
    public struct FieldChange: Sendable, Equatable {
        public enum Kind: String, Sendable, Equatable {
            /// The field gets a value it did not have.
            case added
            /// The field's value is replaced.
            case changed
            /// The field is removed.
            case removed
            /// Concurrent values: a conflict is opened (or gains a side).
            case conflict
        }
        /// Field name (`@name`, `@tags`, … for metadata).
        public var field: String
        public var kind: Kind
        /// The value the field would show (nil for secrets and removals).
        public var value: String?
        public var isSecret: Bool
        /// Number of concurrent values after the merge (1 unless a conflict).
        public var sides: Int
    }

    public struct ItemChange: Sendable, Equatable {
        public enum Kind: String, Sendable, Equatable {
            /// A new item.
            case added
            /// An existing item changes.
            case changed
            /// The item would be deleted.
            case deleted
            /// A deleted item comes back (an edit the delete had not seen).
            case restored
        }
        public var itemID: ItemID
        /// The item's name after the merge.
        public var name: String
        /// The name before, when it changes.
        public var oldName: String?
        public var kind: Kind
        public var fields: [FieldChange]
        /// A delete conflict would be opened.
        public var opensDeleteConflict: Bool
        /// A field conflict would be opened (no conflict before).
        public var opensConflict: Bool
        /// Another live item already has this name (a name clash).
        public var opensNameClash: Bool
    }

    /// Bundle files the preview covers, in merge order.
    public var bundles: [String]
    public var items: [ItemChange]
}

// MARK: - Sync

/// What `sync DIR` did (or, with dry run, would do).
public struct SyncReport: Sendable {
    public struct Skipped: Sendable, Equatable {
        public enum Reason: String, Sendable, Equatable {
            /// This replica's own bundle (or a conflict copy of it).
            case own
            /// Everything in it was merged before (its summary is covered).
            case nothingNew = "nothing-new"
            /// Not a Coffer bundle at all (a README, a .gitattributes …).
            case notABundle = "not-a-bundle"
            /// Written under a master key this vault replaced (an older key
            /// epoch): its replica writes it again once it has adopted the
            /// new key (docs/sync.md §Master-key rotation).
            case olderKeyEpoch = "older-key-epoch"
            /// A snapshot of the same replica covers it (its summary
            /// covers this file's: an older snapshot, or a segment its
            /// writer's compaction removes), or the file went away between
            /// the folder's listing and its reading.
            case replaced
        }
        public var path: String
        public var reason: Reason
        public var replica: ReplicaID?
    }

    public struct Failed: Sendable, Equatable {
        public var path: String
        public var error: CofferError
    }

    public var dir: String
    /// Bundles merged (or that would be, in a dry run).
    public var merged: [ImportReport] = []
    public var skipped: [Skipped] = []
    /// Bundles that could not be merged; the others were.
    public var failed: [Failed] = []
    /// Path of this replica's bundle in `dir`.
    public var ownBundle: String
    /// Whether this replica's bundle was (or would be) written.
    public var wroteOwnBundle = false
    /// This replica's identity is a read-only member: it merged the others'
    /// files and wrote no bundle of its own.
    public var readOnlyMember = false
    /// Conflicts that exist now and did not before.
    public var newConflicts: [VaultConflict] = []
    /// For a dry run: what merging would change.
    public var preview: MergePreview?
    /// The replica id changed (a copied vault, or its id seen in a bundle
    /// written elsewhere).
    public var rebinding: ReplicaRebinding?
    /// This replica's own versions dated beyond what other replicas accept
    /// (its clock ran fast), re-stamped with the current time before its
    /// bundle was written (``Vault/restampFutureWrites(acknowledgedUpTo:)``).
    public var restamped: ClockRestamp?
    /// The newer master key this sync adopted (another replica's `coffer
    /// rekey`) before merging; nil when the key stayed.
    public var keyEpochAdopted: RekeyReport?
    /// The vault unlocked under the adopted key (the one this sync's
    /// caller must use from now on); nil when the key stayed.
    public var adoptedVault: Vault?
    /// A newer key epoch found in the folder and not adopted (a dry run, or
    /// no passphrase was available).
    public var keyEpochPending: KeyEpoch?
    /// The highest counter of this replica id any bundle in `dir` claims
    /// to have seen.
    var seenOwn: UInt64 = 0
    /// Members whose newest file in `dir` is older than one this vault
    /// accepted from them (a folder or remote reset to older files): their
    /// signature is checked before the sync refuses them.
    var olderPublications: [OlderPublication] = []
    /// The lowest counter of this replica id that another replica's bundle
    /// in `dir` claims to have seen (nil: no other replica's bundle): the
    /// writes up to it were accepted by every replica syncing here.
    var acknowledgedOwn: UInt64?
    /// Bundles of this vault in `dir` (any replica, this one included).
    var ownVaultBundles = 0
    /// Vault ids of the bundles of other vaults in `dir`.
    var foreignVaults: Set<VaultID> = []
    /// This replica's own files in `dir` (by their names).
    var ownFiles: [OwnFile] = []
}

/// A bundle file in a sync folder, header read.
struct SyncCandidate {
    var path: String
    var header: BundleHeader
}

extension Replication {
    /// Lists the regular, non-hidden files of `dir`, sorted by name. With
    /// `sweepingStale`, the same listing also removes what a bundle writer
    /// killed before its rename left (`.NAME.coffer-bundle.tmp-…`, here or
    /// on a machine that replicates this folder), by the rule of
    /// ``TempFiles/sweep(dir:names:olderThan:now:isOurs:lockedBy:)``: older
    /// than five minutes and not locked by a live writer (issue 24).
    /// Lists the regular, non-hidden files of `dir`, sorted by name. With
    /// `sweepingStale`, the same listing also removes what a bundle writer
    /// killed before its rename left (`.NAME.coffer-bundle.tmp-…`, here or
    /// on a machine that replicates this folder), by the rule of
    /// ``TempFiles/sweep(dir:names:olderThan:now:isOurs:lockedBy:)``: older
    /// than five minutes and not locked by a live writer (issue 24).
    static func syncFiles(in dir: String, sweepingStale: Bool = false) throws(CofferError) -> [String] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) else {
            throw CofferError(
                .fileNotFound, "no such folder: \(dir)", hint: "create it, or give the folder your sync tool shares (Syncthing, Dropbox, a git work tree)")
        }
        guard isDir.boolValue else {
            throw CofferError(
                .usage, "\(dir) is not a folder",
                remedy: .init(.giveSyncFolder, "give the folder that holds the bundles, not a bundle; importing merges one file", path: dir))
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: dir) } catch {
            throw CofferError(.fileNotFound, "cannot read the folder \(dir)", hint: "check its permissions")
        }
        if sweepingStale {
            let litter = names.filter { AtomicFileOutput.isTempName($0, base: { $0.hasSuffix(".coffer-bundle") }) }
            if !litter.isEmpty { AtomicFileOutput.sweepStale(dir: dir, names: litter) { $0.hasSuffix(".coffer-bundle") } }
        }
        return names.filter { !$0.hasPrefix(".") }.sorted().compactMap { name in
            let p = (dir as NSString).appendingPathComponent(name)
            var st = stat()
            guard stat(p, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
            return p
        }
    }

    /// Reads the clear header of every file in `dir`; sorts them into
    /// candidates to merge, skipped files and failures. Needs no key.
    /// `sweep`: the listing also removes stale bundle temporaries.
    /// `accepted`: the last publication counter this vault accepted per
    /// member key; the scan notes in `report.olderPublications` each key
    /// whose newest file here is below it (``OlderPublication``).
    static func scan(
        dir: String, vaultID: VaultID, replica: ReplicaID, summary: VersionVector, wrapping: KeyWrappingVersion, epoch: KeyEpoch, sweep: Bool = false,
        accepted: [[UInt8]: UInt64] = [:], report: inout SyncReport
    ) throws(CofferError) -> [SyncCandidate] {
        var out: [SyncCandidate] = []
        var newest: [[UInt8]: (path: String, header: BundleHeader)] = [:]
        var ownKeys: Set<[UInt8]> = []
        for path in try syncFiles(in: dir, sweepingStale: sweep) {
            let name = (path as NSString).lastPathComponent
            let ownName = isOwnName(name, replica: replica)
            let header: BundleHeader
            do {
                let input = try BundleFileInput(path: path)
                header = try BundleHeader.read(from: input).header
            } catch {
                if ownName {
                    // One of this replica's names that cannot be read: it
                    // is replaced when this replica next writes.
                    report.ownFiles.append(OwnFile(path: path, name: SegmentName(fileName: name), header: nil, size: fileSize(path)))
                    report.skipped.append(.init(path: path, reason: .own, replica: replica))
                    continue
                }
                if !FileManager.default.fileExists(atPath: path) {
                    // Removed since the listing (its writer compacted).
                    report.skipped.append(.init(path: path, reason: .replaced, replica: nil))
                    continue
                }
                if case .notABundle = error as? BundleError {
                    report.skipped.append(.init(path: path, reason: .notABundle, replica: nil))
                } else if let e = error as? BundleError {
                    report.failed.append(.init(path: path, error: .bundle(e, path: path)))
                } else if let e = error as? CofferError {
                    report.failed.append(.init(path: path, error: e))
                } else {
                    report.failed.append(.init(path: path, error: CofferError(.internalError, "\(error)")))
                }
                continue
            }
            if ownName {
                report.ownFiles.append(OwnFile(path: path, name: SegmentName(fileName: name), header: header, size: fileSize(path)))
            }
            guard header.vaultID == vaultID else {
                report.foreignVaults.insert(header.vaultID)
                report.failed.append(
                    .init(
                        path: path,
                        error: CofferError(
                            .badData,
                            "\(path) is a bundle of a different vault (vault id \(header.vaultID.hex.prefix(8))…, this vault is \(vaultID.hex.prefix(8))…)",
                            remedy: .init(.separateVaults, "keep one vault's bundles per sync folder: move it to that vault's folder", path: path))))
                continue
            }
            report.ownVaultBundles += 1
            report.seenOwn = max(report.seenOwn, header.summary[replica])
            if let key = header.publisher {
                if header.replicaID == replica {
                    ownKeys.insert(key)
                } else if header.publication > newest[key]?.header.publication ?? 0 {
                    newest[key] = (path, header)
                }
            }
            if header.replicaID == replica {
                report.skipped.append(.init(path: path, reason: .own, replica: header.replicaID))
                continue
            }
            report.acknowledgedOwn = min(report.acknowledgedOwn ?? .max, header.summary[replica])
            if header.keyEpoch < epoch {
                report.skipped.append(.init(path: path, reason: .olderKeyEpoch, replica: header.replicaID))
                continue
            }
            if header.keyEpoch == epoch, Replication.bringsNothing(header, summary: summary, wrapping: wrapping) {
                report.skipped.append(.init(path: path, reason: .nothingNew, replica: header.replicaID))
                continue
            }
            out.append(SyncCandidate(path: path, header: header))
        }
        if !accepted.isEmpty {
            report.olderPublications = OlderPublication.find(newest: newest, accepted: accepted, ownKeys: ownKeys)
            let refused = Set(report.olderPublications.map(\.path))
            out.removeAll { refused.contains($0.path) }
        }
        return mergeOrder(out)
    }

    /// The last publication counter accepted per member key.
    static func acceptedCounters(_ db: StoreConnection) throws -> [[UInt8]: UInt64] {
        var out: [[UInt8]: UInt64] = [:]
        for p in try Queries.publishers(db) { out[p.signKey] = p.counter }
        return out
    }

    static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// This replica's chain in `dir` as the scan found it, and what it
    /// would write now (nil: its newest file is current).
    func publication(_ report: SyncReport, replica: ReplicaID, exportable: VersionVector, wrapping: KeyWrappingVersion) -> (
        SegmentChain, Publication?
    ) {
        let chain = SegmentChain(
            own: report.ownFiles, vaultID: vaultID, replica: replica, epoch: keyRotation.keyEpoch, exportable: exportable, now: Clock.nowMillis())
        return (chain, Publication.plan(chain: chain, replica: replica, exportable: exportable, wrapping: wrapping))
    }

    package func sync(
        dir: String, dryRun: Bool = false, adoptAboveOwnKDF: Bool = false,
        adoptKey: ((KeyEpoch, String, Int) throws(CofferError) -> SecretBytes?)? = nil, identity member: MemberIdentity? = nil
    ) throws(CofferError) -> SyncReport {
        // A vault edited outside coffer is refused before anything is
        // merged or written, dry run included (docs/threat-model.md).
        try CofferError.wrap { try store.read { db in try checkVaultMAC(db) } }
        var rebinding = dryRun ? nil : try identity.claimReplica()
        var (local, summary, exportable, wrapping) = try CofferError.wrap {
            try store.read { db in (try Queries.localReplica(db), try Queries.summary(db), try Replication.exportableSummary(db), try Queries.keyWrapping(db)) }
        }
        let accepted = try CofferError.wrap { try store.read { db in try Replication.acceptedCounters(db) } }
        var report = SyncReport(dir: dir, ownBundle: "")
        // Bundles whose writer was killed before the rename (here or on a
        // machine that replicates this folder) are litter (issues 13, 24):
        // swept from the folder's one listing, except in a dry run.
        var candidates = try Replication.scan(
            dir: dir, vaultID: vaultID, replica: local.id, summary: summary, wrapping: wrapping, epoch: keyRotation.keyEpoch, sweep: !dryRun,
            accepted: accepted, report: &report)
        // A folder that has seen more of this replica id than this file
        // ever exported shows a restored backup: take a new id (and move
        // the writes since the last export to it) before merging or
        // writing anything, then look at the folder again.
        if !dryRun, let r = try identity.adoptIfRestored(seen: report.seenOwn, bundles: Replication.syncFiles(in: dir)) {
            rebinding = r
            (local, summary, exportable, wrapping) = try CofferError.wrap {
                try store.read { db in
                    (try Queries.localReplica(db), try Queries.summary(db), try Replication.exportableSummary(db), try Queries.keyWrapping(db))
                }
            }
            report = SyncReport(dir: dir, ownBundle: "")
            candidates = try Replication.scan(
                dir: dir, vaultID: vaultID, replica: local.id, summary: summary, wrapping: wrapping, epoch: keyRotation.keyEpoch, accepted: accepted,
                report: &report)
        }
        report.rebinding = rebinding
        // A member's newest file here older than one this vault accepted:
        // the folder or the remote was reset (docs/sharing.md); refused
        // once its signature verifies, like `import` of that file.
        try refuseOlderPublications(report.olderPublications, report: &report)
        // Never put this vault's bundle into another vault's folder: every
        // machine of that vault would warn about it on every sync.
        if report.ownVaultBundles == 0, let other = report.foreignVaults.sorted().first {
            throw Replication.foreignFolder(dir: dir, other: other, vaultID: vaultID, vaultPath: path)
        }
        // Versions this replica wrote while its clock ran fast, which the
        // others refuse, get the current time before anything is merged or
        // written (docs/sync.md, "A clock that ran fast"). Only the writes
        // some replica here has not merged yet are looked at.
        if !dryRun {
            report.restamped = try restampFutureWrites(acknowledgedUpTo: report.acknowledgedOwn ?? 0)
        }

        let epoch = keyRotation.keyEpoch
        for c in candidates where c.header.keyEpoch > epoch && !epoch.mayAdopt(c.header.keyEpoch) {
            report.failed.append(.init(path: c.path, error: KeyRotation.epochJumpError(path: c.path, bundle: c.header.keyEpoch, vault: epoch)))
        }
        candidates.removeAll { $0.header.keyEpoch > epoch && !epoch.mayAdopt($0.header.keyEpoch) }
        if let newest = candidates.filter({ $0.header.keyEpoch > epoch }).max(by: { $0.header.keyEpoch < $1.header.keyEpoch }),
            !dryRun, adoptKey != nil, member == nil, !adoptAboveOwnKDF, KeyRotation.exceeds(newest.header.kdf, file.kdf)
        {
            report.keyEpochPending = newest.header.keyEpoch
            for c in candidates where c.header.keyEpoch > epoch {
                report.failed.append(.init(path: c.path, error: KeyRotation.expensiveAdoptionError(path: c.path, bundle: c.header, own: file.kdf)))
            }
            candidates.removeAll { $0.header.keyEpoch > epoch }
        }
        if let newest = candidates.filter({ $0.header.keyEpoch > epoch }).max(by: { $0.header.keyEpoch < $1.header.keyEpoch }) {
            // A replica with a member identity adopts the new key through
            // the box sealed to it (docs/sharing.md, "Member replicas"); no
            // box: it was removed, and nothing is merged — unless
            // `adoptKey` may still ask for the passphrase (a replica
            // unlocked with it).
            if !dryRun, let member,
                let (next, adopted) = try keyRotation.adoptKeyEpoch(ofBundleAt: newest.path, identity: member, orPassphrase: adoptKey != nil)
            {
                var result = try next.replication.sync(dir: dir, dryRun: false, adoptAboveOwnKDF: adoptAboveOwnKDF, adoptKey: adoptKey, identity: member)
                result.keyEpochAdopted = adopted
                if result.restamped == nil { result.restamped = report.restamped }
                if result.adoptedVault == nil { result.adoptedVault = next }
                if result.rebinding == nil { result.rebinding = rebinding }
                return result
            }
            if !dryRun, let adoptKey {
                let (next, adopted) = try keyRotation.adoptKeyEpoch(ofBundleAt: newest.path) { (e, attempt) throws(CofferError) in
                    try adoptKey(e, newest.path, attempt)
                }
                var result = try next.sync(dir: dir, dryRun: false, adoptAboveOwnKDF: adoptAboveOwnKDF, adoptKey: adoptKey)
                result.keyEpochAdopted = adopted
                if result.restamped == nil { result.restamped = report.restamped }
                if result.adoptedVault == nil { result.adoptedVault = next }
                if result.rebinding == nil { result.rebinding = rebinding }
                return result
            }
            report.keyEpochPending = newest.header.keyEpoch
            // A dry run says it would adopt the key; it cannot preview the
            // bundles of that key before (it holds only the old one).
            for c in candidates where c.header.keyEpoch > epoch && !dryRun {
                report.failed.append(.init(path: c.path, error: KeyRotation.newerEpochError(path: c.path, bundle: c.header.keyEpoch, vault: epoch)))
            }
            candidates.removeAll { $0.header.keyEpoch > epoch }
        }

        if dryRun {
            var overlay: [ItemID: Overlay] = [:]
            var items: [MergePreview.ItemChange] = []
            var bundles: [String] = []
            for c in candidates {
                do {
                    let (r, changes) = try previewBundle(at: c.path, overlay: &overlay)
                    report.merged.append(r)
                    items += changes
                    bundles.append(c.path)
                } catch {
                    report.failed.append(.init(path: c.path, error: error))
                }
            }
            report.preview = MergePreview(bundles: bundles, items: Replication.collapse(items))
            let (chain, plan) = publication(report, replica: local.id, exportable: exportable, wrapping: wrapping)
            report.wroteOwnBundle = !report.merged.isEmpty || plan?.write != nil
            let next = (plan?.write != nil ? plan?.name : nil) ?? chain.tip?.name ?? SegmentName(replica: local.id, first: 0, last: 1)
            report.ownBundle = (dir as NSString).appendingPathComponent(next.fileName)
            return report
        }

        let before = candidates.isEmpty ? [] : try conflictResolution.conflicts()
        var mergedSnapshotOf: Set<ReplicaID> = []
        let refused = try Replication.mergeRetrying(candidates) { c throws(CofferError) -> Replication.MergeOutcome in
            // An earlier bundle (say the original of a conflict copy, or a
            // newer snapshot of the same replica) may have brought
            // everything this one holds.
            let now = try CofferError.wrap { try store.read { db in (try Queries.summary(db), try Queries.keyWrapping(db)) } }
            if Replication.bringsNothing(c.header, summary: now.0, wrapping: now.1) {
                let reason: SyncReport.Skipped.Reason = mergedSnapshotOf.contains(c.header.replicaID) ? .replaced : .nothingNew
                report.skipped.append(.init(path: c.path, reason: reason, replica: c.header.replicaID))
                return .skipped
            }
            if c.header.kind == .delta, !c.header.since.isDominated(by: now.0) {
                return .refused(Replication.segmentGapError(path: c.path, header: c.header, dir: dir))
            }
            do throws(CofferError) {
                report.merged.append(try importBundle(at: c.path))
                if c.header.kind == .full { mergedSnapshotOf.insert(c.header.replicaID) }
                return .merged
            } catch {
                return .refused(error)
            }
        }
        report.failed += refused.map { SyncReport.Failed(path: $0.file.path, error: $0.error) }
        if !report.merged.isEmpty {
            let old = Set(before.map(ConflictKey.init))
            report.newConflicts = try conflictResolution.conflicts().filter { !old.contains(ConflictKey($0)) }
            // A bundle may show this replica's id used by another file.
            if let r = try identity.claimReplica() { report.rebinding = r }
        }
        let (nowLocal, nowSummary, nowWrapping) = try CofferError.wrap {
            try store.read { db in (try Queries.localReplica(db), try Replication.exportableSummary(db), try Queries.keyWrapping(db)) }
        }
        // A new replica id (taken just now) has no files here yet.
        if nowLocal.id != local.id { report.ownFiles = [] }
        let (chain, plan) = publication(report, replica: nowLocal.id, exportable: nowSummary, wrapping: nowWrapping)
        report.ownBundle = chain.tip?.path ?? ""
        // A read-only member's replica merges the others' files and
        // publishes nothing: every replica would refuse its bundle
        // (docs/sharing.md, "Read-only members").
        if plan != nil, try publishesAsReadOnlyMember() {
            report.readOnlyMember = true
            return report
        }
        if let plan {
            if let written = try publish(plan, dir: dir) {
                report.ownBundle = written
                report.wroteOwnBundle = true
            }
        }
        return report
    }

    static func foreignFolder(dir: String, other: VaultID, vaultID: VaultID, vaultPath: String) -> CofferError {
        CofferError(
            .badData,
            "\(dir) holds the bundles of a different vault (vault id \(other.hex.prefix(8))…; this vault is \(vaultID.hex.prefix(8))…); nothing was written",
            remedy: .init(
                .cloneOrUseAnotherFolder,
                "to make this machine a replica of that vault, move \(vaultPath) aside and clone it from \(dir); to sync this vault, use another folder",
                path: dir, vaultPath: vaultPath))
    }

    package static func checkSyncFolder(_ dir: String, file: VaultFile) throws(CofferError) {
        let bundles = try bundlesInFolder(dir)
        guard !bundles.contains(where: { $0.header.vaultID == file.header.vaultID }),
            let other = bundles.map(\.header.vaultID).sorted().first
        else { return }
        throw foreignFolder(dir: dir, other: other, vaultID: file.header.vaultID, vaultPath: file.path)
    }

    package static func syncIsNoop(file: VaultFile, dir: String) throws(CofferError) -> Bool {
        let (local, summary, exportable, wrapping, newest, accepted) = try CofferError.wrap {
            try file.store.read { db in
                let local = try Queries.localReplica(db)
                return (
                    local, try Queries.summary(db), try Replication.exportableSummary(db), try Queries.keyWrapping(db),
                    try Queries.newestWriteTime(db, replica: local.id), try Replication.acceptedCounters(db)
                )
            }
        }
        if local.boundHost != MachineIdentity.host || local.boundInode != MachineIdentity.inode(of: file.path) { return false }
        // This replica's newest version was written while its clock ran
        // fast: the full sync re-stamps it (one index seek).
        if let newest, newest > Clock.nowMillis() &+ BundleValidation.clockSkew { return false }
        if summary[local.id] > local.counter { return false }
        if let mark = WriteMark.read(vault: file.path, replica: local.id), mark > local.counter { return false }
        var report = SyncReport(dir: dir, ownBundle: "")
        let candidates = try scan(
            dir: dir, vaultID: file.header.vaultID, replica: local.id, summary: summary, wrapping: wrapping, epoch: file.keyEpoch, sweep: true,
            accepted: accepted, report: &report)
        // A member's file older than one accepted: the full sync checks
        // its signature and refuses it.
        guard candidates.isEmpty, report.failed.isEmpty, report.olderPublications.isEmpty else { return false }
        let exported = try CofferError.wrap { try file.store.read { db in try Queries.exportedCounter(db) } }
        if report.seenOwn > exported { return false }
        let chain = SegmentChain(
            own: report.ownFiles, vaultID: file.header.vaultID, replica: local.id, epoch: file.keyEpoch, exportable: exportable, now: Clock.nowMillis())
        return Publication.plan(chain: chain, replica: local.id, exportable: exportable, wrapping: wrapping) == nil
    }

    // MARK: Preview

    /// An item as a preview sees it: the stored row (nil for a new item)
    /// and the state after the bundles previewed so far.
    struct Overlay {
        var row: ItemRow?
        var original: ItemState
        var state: ItemState
    }

    package func previewImport(paths: [String]) throws(CofferError) -> (reports: [ImportReport], preview: MergePreview) {
        var overlay: [ItemID: Overlay] = [:]
        var reports: [ImportReport] = []
        var items: [MergePreview.ItemChange] = []
        for p in paths {
            let (r, changes) = try previewBundle(at: p, overlay: &overlay)
            reports.append(r)
            items += changes
        }
        return (reports, MergePreview(bundles: paths, items: Replication.collapse(items)))
    }

    /// Keeps the last change per item (later bundles build on earlier ones),
    /// in first-seen order.
    static func collapse(_ items: [MergePreview.ItemChange]) -> [MergePreview.ItemChange] {
        var order: [ItemID] = []
        var last: [ItemID: MergePreview.ItemChange] = [:]
        for i in items {
            if last[i.itemID] == nil { order.append(i.itemID) }
            last[i.itemID] = i
        }
        return order.compactMap { last[$0] }.sorted { ($0.name, $0.itemID) < ($1.name, $1.itemID) }
    }

    func previewBundle(at path: String, overlay: inout [ItemID: Overlay]) throws(CofferError) -> (ImportReport, [MergePreview.ItemChange]) {
        let (input, header, prefix) = try openOwnBundle(at: path)
        switch keyRotation.keyEpochStatus(of: header) {
        case .same: break
        case .older(let e): throw KeyRotation.olderEpochError(path: path, bundle: e, vault: keyRotation.keyEpoch)
        case .newer(let e):
            var error = KeyRotation.newerEpochError(path: path, bundle: e, vault: keyRotation.keyEpoch)
            error.remedy = .init(
                .adoptKeyWithoutDryRun,
                "a dry run cannot show its changes before the new key is adopted; import for real to adopt it (the passphrase is asked once)", path: path)
            throw error
        }
        let reader: BundleReader
        do { reader = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: keys.bundle) } catch {
            throw .bundle(error, path: path)
        }
        var local = overlay
        let result: (ImportReport, [MergePreview.ItemChange]) = try CofferError.wrap {
            try store.read { db in
                if header.kind == .delta {
                    guard header.since.isDominated(by: try Queries.summary(db)) else {
                        throw CofferError(
                            .badData, "\(path) is a delta bundle that assumes changes this vault has not seen",
                            hint: "import the bundles it depends on first, or ask for a full bundle")
                    }
                }
                var report = ImportReport(path: path, kind: header.kind, exportingReplica: header.replicaID)
                report.passphraseChange = try previewKeyWrapping(header, db: db)
                var changes: [MergePreview.ItemChange] = []
                let rules = try ReceiverRules(header: header, path: path, db: db, previewing: true)
                try rules.checkHeader(now: Clock.nowMillis())
                let signed = try SignedImport(header: header, path: path, db: db, roster: try roster(db, overlay: local))
                // Versions the vault has seen change nothing (as in import).
                let seen = try Queries.summary(db)
                while true {
                    let next: ItemState?
                    do { next = try reader.next() } catch let e as BundleError { throw CofferError.bundle(e, path: path) }
                    guard let full = next else { break }
                    report.records += 1
                    try rules.check(record: full)
                    // The same filter as a real import (Replication/Bundle.swift).
                    let incoming = signed.filter(Replication.unseenPart(of: full, seen: seen))
                    if incoming.registers.isEmpty {
                        report.unchanged += 1
                        continue
                    }
                    var o: Overlay
                    if let held = local[incoming.id] {
                        o = held
                    } else if let (row, s, _) = try loadItem(db, id: incoming.id) {
                        o = Overlay(row: row, original: s, state: s)
                    } else {
                        o = Overlay(row: nil, original: ItemState(id: incoming.id), state: ItemState(id: incoming.id))
                    }
                    try rules.check(incoming: incoming, held: o.state)
                    let merged = o.state.merged(with: incoming)
                    if merged == o.state {
                        report.unchanged += 1
                        continue
                    }
                    for (rid, versions) in merged.registers {
                        let held = Set((o.state.registers[rid] ?? []).map(\.dot))
                        for v in versions where !held.contains(v.dot) {
                            report.versionsAdded += 1
                            _ = try openIncoming(v, item: incoming.id, register: rid, path: path)
                        }
                    }
                    if o.row == nil && o.state.registers.isEmpty { report.added += 1 } else { report.changed += 1 }
                    o.state = merged
                    local[incoming.id] = o
                    report.touchedItems.append(incoming.id)
                    let change = try describe(o, db: db)
                    if change.opensConflict || change.opensDeleteConflict { report.conflictsOpened += 1 }
                    changes.append(change)
                }
                report.signedBy = try signed.checkSigner(roster: try roster(db, overlay: local))
                return (report, changes)
            }
        }
        overlay = local
        return result
    }

    /// The change from an overlay's original state to its current one.
    func describe(_ o: Overlay, db: StoreConnection) throws -> MergePreview.ItemChange {
        let old = o.original
        let new = o.state
        func text(_ s: ItemState, _ rid: RegisterID) throws -> String? {
            guard let v = Register.shown(s.registers[rid] ?? []), !v.isTombstone else { return nil }
            return try open(v, item: s.id, register: rid).text
        }
        let newName = try text(new, .name) ?? ""
        let oldName = try text(old, .name)
        let isNew = o.row == nil && old.registers.isEmpty
        let wasDeleted = o.row?.isDeleted ?? false
        let kind: MergePreview.ItemChange.Kind
        if isNew {
            kind = new.isDeleted ? .deleted : .added
        } else if new.isDeleted && !wasDeleted {
            kind = .deleted
        } else if !new.isDeleted && wasDeleted {
            kind = .restored
        } else {
            kind = .changed
        }
        var fields: [MergePreview.FieldChange] = []
        for rid in Set(old.registers.keys).union(new.registers.keys) where rid != .deleted {
            let before = old.registers[rid] ?? []
            let after = new.registers[rid] ?? []
            guard Set(before.map(\.dot)) != Set(after.map(\.dot)), let shown = Register.shown(after) else { continue }
            let p = try open(shown, item: new.id, register: rid)
            let name = Vault.metadataRegisters.first { $0.0 == rid }?.1 ?? p.name
            let value = (p.isSecret || shown.isTombstone) ? nil : p.text
            let fk: MergePreview.FieldChange.Kind
            if after.count > 1 {
                fk = .conflict
            } else if shown.isTombstone {
                fk = .removed
            } else if before.isEmpty || before.allSatisfy(\.isTombstone) {
                fk = .added
            } else {
                fk = .changed
            }
            fields.append(.init(field: name, kind: fk, value: value, isSecret: p.isSecret, sides: after.count))
        }
        fields.sort { $0.field < $1.field }
        var clash = false
        if !new.isDeleted, !newName.isEmpty, newName != oldName || isNew || (kind == .restored) {
            let hash = KeyHierarchy.nameHash(newName, nameKey: keys.nameIndex)
            clash = try !Queries.itemIDs(db, nameHash: hash).filter { $0 != new.id }.isEmpty
        }
        return MergePreview.ItemChange(
            itemID: new.id, name: newName.isEmpty ? (oldName ?? "") : newName,
            oldName: (oldName != nil && oldName != newName) ? oldName : nil, kind: kind, fields: fields,
            opensDeleteConflict: new.hasDeleteConflict && !old.hasDeleteConflict,
            opensConflict: !new.conflictedRegisters.isEmpty && old.conflictedRegisters.isEmpty,
            opensNameClash: clash)
    }

    // MARK: Replicas

    package func replicas() throws(CofferError) -> [ReplicaInfo] {
        try CofferError.wrap {
            try store.read { db in
                let local = try Queries.localReplica(db)
                return try Queries.knownReplicas(db).map {
                    ReplicaInfo(
                        id: $0.id, counter: $0.counter, lastImportAt: $0.lastImportAt.map(Clock.date),
                        isLocal: $0.id == local.id)
                }
            }
        }
    }
}

/// A replica known to this vault.
public struct ReplicaInfo: Sendable, Equatable {
    public var id: ReplicaID
    /// The highest write counter seen from it.
    public var counter: UInt64
    /// When a bundle exported by it was last merged (nil: never; for this
    /// replica, or one only known through others' bundles).
    public var lastImportAt: Date?
    /// This vault file's own replica.
    public var isLocal: Bool
}

/// Identity of a conflict for before/after comparisons.
struct ConflictKey: Hashable {
    var item: ItemID
    var field: String
    var sides: Int
    init(_ c: VaultConflict) {
        item = c.itemID
        field = c.field
        sides = c.sides.count
    }
}
