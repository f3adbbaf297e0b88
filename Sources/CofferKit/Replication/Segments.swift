import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The name of one of a replica's files in a sync folder: a *snapshot* (a
/// full bundle; `first` is 0) or a *segment* (a delta bundle) holding what
/// that replica published in its publications `first...last`
/// (docs/sync.md, "Snapshots and segments"):
/// `<replica id, 32 hex>.<first, 10 digits>-<last, 10 digits>.coffer-bundle`.
/// Files are immutable: a replica never writes a name twice (short of its
/// numbers running out after ten billion publications).
package struct SegmentName: Hashable, Sendable, CustomStringConvertible {
    package var replica: ReplicaID
    package var first: UInt64
    package var last: UInt64

    /// Digits of each publication number in a name.
    static let width = 10
    /// The largest publication number a name holds.
    static let maxNumber: UInt64 = 9_999_999_999
    static let suffix = ".coffer-bundle"

    package init(replica: ReplicaID, first: UInt64, last: UInt64) {
        self.replica = replica
        self.first = min(first, Self.maxNumber)
        self.last = min(max(last, first), Self.maxNumber)
    }

    /// A snapshot: everything, from nothing.
    package var isSnapshot: Bool { first == 0 }
    /// Number of publications a segment holds.
    var span: UInt64 { last - first + 1 }

    package var fileName: String { replica.hex + "." + Self.digits(first) + "-" + Self.digits(last) + Self.suffix }
    package var description: String { fileName }

    static func digits(_ n: UInt64) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    /// Parses a file name; nil for any other name (the single-bundle name
    /// of earlier versions, a conflict copy, a stray file).
    package init?(fileName name: String) {
        let u = Array(name.utf8)
        let hexEnd = 32
        let firstEnd = hexEnd + 1 + Self.width
        let lastEnd = firstEnd + 1 + Self.width
        guard u.count == lastEnd + Self.suffix.utf8.count, name.hasSuffix(Self.suffix), u[hexEnd] == UInt8(ascii: "."),
            u[firstEnd] == UInt8(ascii: "-")
        else { return nil }
        let hex = String(decoding: u[0..<hexEnd], as: UTF8.self)
        guard let replica = ReplicaID(hex: hex), replica.hex == hex else { return nil }
        func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
            // Ten digits: at most 9 999 999 999, no overflow.
            var n: UInt64 = 0
            for c in digits {
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                n = n * 10 + UInt64(c - UInt8(ascii: "0"))
            }
            return n
        }
        guard let first = number(u[(hexEnd + 1)..<firstEnd]), let last = number(u[(firstEnd + 1)..<lastEnd]), first <= last else { return nil }
        self.replica = replica
        self.first = first
        self.last = last
    }
}

/// One of this replica's files found in a sync folder: named as its
/// snapshot or segment (or with the single-bundle name of earlier
/// versions). `header` is nil when the file's header cannot be read.
struct OwnFile {
    var path: String
    var name: SegmentName?
    var header: BundleHeader?
    var size: Int64
}

/// This replica's files in a folder, sorted into the chain it publishes
/// (a snapshot, then segments each of which starts where the previous one
/// ended and was computed against its summary) and the rest (replaced,
/// orphaned by a crash between a write and the removals it makes
/// obsolete, damaged, of an older key epoch, or with the single-bundle
/// name of earlier versions): removed when this replica next writes.
struct SegmentChain {
    var files: [OwnFile] = []
    var stale: [OwnFile] = []
    /// The highest publication number in any of this replica's names.
    var highest: UInt64 = 0

    /// A file may be in the chain only if it is this vault's and this
    /// replica's, of the current key epoch, not dated beyond the clock
    /// skew the receivers accept, its kind matches its name, and it claims
    /// no more than this replica can export now.
    init(own: [OwnFile], vaultID: VaultID, replica: ReplicaID, epoch: KeyEpoch, exportable: VersionVector, now: Int64) {
        func usable(_ f: OwnFile) -> Bool {
            guard let n = f.name, let h = f.header else { return false }
            return n.replica == replica && h.vaultID == vaultID && h.replicaID == replica && (h.kind == .full) == n.isSnapshot
                && h.keyEpoch == epoch && h.createdAt <= now &+ BundleValidation.clockSkew && h.summary.isDominated(by: exportable)
        }
        highest = own.compactMap { $0.name?.last }.max() ?? 0
        let candidates: [(file: OwnFile, name: SegmentName, header: BundleHeader)] = own.compactMap { f in
            guard usable(f), let n = f.name, let h = f.header else { return nil }
            return (f, n, h)
        }
        if let snapshot = candidates.filter({ $0.name.isSnapshot }).max(by: { $0.name.last < $1.name.last }) {
            files = [snapshot.file]
            var tip = snapshot
            // Where a compaction was interrupted, the longest segment that
            // continues the chain is the one that replaced the others.
            while let next = candidates.filter({
                !$0.name.isSnapshot && $0.name.first == tip.name.last + 1 && $0.header.since == tip.header.summary
            }).max(by: { $0.name.last < $1.name.last }) {
                files.append(next.file)
                tip = next
            }
        }
        let kept = Set(files.map(\.path))
        stale = own.filter { !kept.contains($0.path) }
    }

    var tip: OwnFile? { files.last }
    var snapshot: OwnFile? { files.first }
    var segments: ArraySlice<OwnFile> { files.dropFirst() }
}

/// What this replica writes into a folder, and which of its files that
/// makes obsolete.
struct Publication: Equatable {
    enum Write: Equatable {
        /// A full bundle (a compaction, or the first file).
        case snapshot
        /// A delta bundle against `since`, the summary of the chain's
        /// file that ends just before `name.first`.
        case segment(since: VersionVector, sinceFile: String)
    }
    /// nil: nothing to write, only files to remove.
    var write: Write?
    var name: SegmentName
    var removing: [String]
    /// Every file of this replica's in the folder: what a snapshot
    /// written instead of a planned segment removes.
    var allOwn: [String] = []

    /// Segments merged into one when `fanIn` of equal span end the chain,
    /// so that a replica keeps about `(fanIn - 1) × log(fanIn, n)`
    /// segments after `n` publications and each change is rewritten about
    /// `log(fanIn, n)` times.
    static let fanIn: UInt64 = 4
    /// A compaction (a new snapshot) happens once the segments together
    /// outgrow this fraction of the snapshot, so the folder holds at most
    /// about 1.5 times one full state per replica.
    static let compactionFraction = 0.5

    /// What to write, given this replica's chain and its state now; nil
    /// when the chain is current and nothing is stale.
    static func plan(chain: SegmentChain, replica: ReplicaID, exportable: VersionVector, wrapping: KeyWrappingVersion) -> Publication? {
        let everyOther = (chain.files + chain.stale).map(\.path)
        guard let tip = chain.tip, let tipName = tip.name, let tipHeader = tip.header, let snapshot = chain.snapshot, let snapName = snapshot.name else {
            return Publication(write: .snapshot, name: SegmentName(replica: replica, first: 0, last: chain.highest + 1), removing: everyOther)
        }
        if tipHeader.summary == exportable && tipHeader.wrapping == wrapping {
            return chain.stale.isEmpty ? nil : Publication(write: nil, name: tipName, removing: chain.stale.map(\.path))
        }
        let next = max(chain.highest, tipName.last) + 1
        guard next <= SegmentName.maxNumber else {
            // Ten billion publications: start the numbers again.
            return Publication(write: .snapshot, name: SegmentName(replica: replica, first: 0, last: 1), removing: everyOther)
        }
        let segments = Array(chain.segments)
        let segmentBytes = segments.reduce(Int64(0)) { $0 &+ $1.size }
        // A passphrase change is written into a new snapshot, so that the
        // snapshot a new machine clones from opens with the passphrase in
        // use (a segment carries the new wrapping only to replicas).
        if Double(segmentBytes) > compactionFraction * Double(snapshot.size) || snapshot.header?.wrapping != wrapping {
            return Publication(write: .snapshot, name: SegmentName(replica: replica, first: 0, last: next), removing: everyOther)
        }
        // A counter in base `fanIn`: the new publication has span 1; when
        // `fanIn - 1` segments of its span end the chain, they merge with
        // it into one of `fanIn` times that span, and so on.
        var start = segments.count
        var span: UInt64 = 1
        var first = next
        while true {
            var run = 0
            while run < Int(fanIn - 1), start - run - 1 >= 0, segments[start - run - 1].name?.span == span { run += 1 }
            guard run == Int(fanIn - 1), let merged = segments[start - run].name else { break }
            start -= run
            first = merged.first
            span *= fanIn
        }
        let base = start == 0 ? snapshot : segments[start - 1]
        guard let since = base.header?.summary, (base.name?.last ?? snapName.last) + 1 == first else {
            return Publication(write: .snapshot, name: SegmentName(replica: replica, first: 0, last: next), removing: everyOther)
        }
        return Publication(
            write: .segment(since: since, sinceFile: base.path), name: SegmentName(replica: replica, first: first, last: next),
            removing: segments[start...].map(\.path) + chain.stale.map(\.path), allOwn: everyOther)
    }
}

extension Replication {
    /// The single-bundle name earlier versions gave a replica's file; a
    /// replica removes its own when it writes its first snapshot.
    package static func legacyBundleFileName(replica: ReplicaID) -> String { replica.hex + ".coffer-bundle" }

    /// Whether `name` (a file name in a sync folder) is one of `replica`'s
    /// own names: only such files are ever removed by it.
    static func isOwnName(_ name: String, replica: ReplicaID) -> Bool {
        SegmentName(fileName: name)?.replica == replica || name == legacyBundleFileName(replica: replica)
    }

    /// Writes this replica's next file into `dir` as `plan` says, then
    /// removes the files it makes obsolete. The file is written whole
    /// under a temporary name and renamed (``AtomicFileOutput``), so a
    /// reader sees it complete or not at all; the removals come after the
    /// rename, so a crash in between leaves files that the chain's next
    /// reading finds stale (never a gap). Returns the path written.
    func publish(_ plan: Publication, dir: String) throws(CofferError) -> String? {
        var written: String?
        var plan = plan
        if case .segment(_, let sinceFile) = plan.write, !authenticates(sinceFile) {
            // The summary a segment is computed against must be the one
            // this replica wrote; a file edited by anyone else makes it
            // start again from a snapshot.
            plan = Publication(
                write: .snapshot, name: SegmentName(replica: plan.name.replica, first: 0, last: plan.name.last),
                removing: Set(plan.allOwn + [sinceFile]).sorted())
        }
        if let write = plan.write {
            let path = (dir as NSString).appendingPathComponent(plan.name.fileName)
            switch write {
            // sync checked the vault MAC before merging (Replication.sync).
            case .snapshot: try exportBundle(to: path, since: nil, streamHeader: nil, createdAt: nil, verified: true)
            case .segment(let since, _): try exportBundle(to: path, since: since, streamHeader: nil, createdAt: nil, verified: true)
            }
            written = path
        }
        var removed = false
        for p in plan.removing where p != written {
            if unlink(p) == 0 { removed = true }
        }
        if removed {
            let dfd = Glibc.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dfd >= 0 {
                fsync(dfd)
                close(dfd)
            }
        }
        return written
    }

    func bringsNothing(_ header: BundleHeader) throws(CofferError) -> Bool {
        let (summary, wrapping) = try CofferError.wrap { try store.read { db in (try Queries.summary(db), try Queries.keyWrapping(db)) } }
        return header.vaultID == vaultID && header.keyEpoch == keyRotation.keyEpoch
            && Replication.bringsNothing(header, summary: summary, wrapping: wrapping)
    }

    /// A segment whose earlier segments this vault has not merged and the
    /// folder does not hold (deleted by hand, or not arrived yet).
    static func segmentGapError(path: String, header: BundleHeader, dir: String) -> CofferError {
        let name = (path as NSString).lastPathComponent
        return CofferError(
            .badData,
            "\(name) holds changes of replica \(header.replicaID.hex.prefix(8)) that follow earlier ones this vault has not merged, and \(dir) does not hold them (removed, or not arrived yet)",
            hint:
                "if your sync tool is still copying, sync again once it is done; if files were deleted, sync on replica \(header.replicaID.hex.prefix(8))'s machine: it writes a new snapshot when its files are missing"
        )
    }

    /// Whether the file at `path` decrypts under this vault's key (its
    /// header is the one its writer wrote).
    private func authenticates(_ path: String) -> Bool {
        guard let (input, header, prefix) = try? openOwnBundle(at: path) else { return false }
        return (try? BundleReader(header: header, prefix: prefix, input: input, bundleKey: keys.bundle)) != nil
    }

    /// The order bundles of a folder are merged in: full bundles (a
    /// replica's snapshots) before deltas, the snapshot that has seen most
    /// first, so that an older snapshot of the same replica, and the
    /// segments a compaction replaced, then bring nothing and are skipped
    /// without being read — decided by the headers' summaries at merge time,
    /// never by the names, so a renamed file cannot hide another, and a
    /// damaged newest snapshot leaves the older files to merge. Deltas keep
    /// the folder's (name) order.
    static func mergeOrder(_ candidates: [SyncCandidate]) -> [SyncCandidate] {
        let seen = { (h: BundleHeader) in h.summary.entries.reduce(0.0) { $0 + Double($1.counter) } }
        let full = candidates.filter { $0.header.kind == .full }.enumerated().sorted {
            (seen($0.element.header), -$0.offset) > (seen($1.element.header), -$1.offset)
        }.map(\.element)
        return full + candidates.filter { $0.header.kind != .full }
    }

    /// What merging one file of a folder came to.
    enum MergeOutcome {
        case merged, skipped
        case refused(CofferError)
    }

    /// Merges `files` in turn with `merge`. That order is not the order
    /// they were written in, so a file may be refused only for want of a
    /// later one (a new member's file before the file that adds them: rule
    /// signer-member; a segment before the file its base came in): the
    /// refused ones are tried again after every pass that merged
    /// something, until a pass merges nothing (docs/sync.md). Returns the
    /// files still refused then, with their errors; an error `merge`
    /// throws ends the whole merge.
    static func mergeRetrying<File>(_ files: [File], _ merge: (File) throws(CofferError) -> MergeOutcome) throws(CofferError) -> [(
        file: File, error: CofferError
    )] {
        var pending = files
        while true {
            var refused: [(file: File, error: CofferError)] = []
            var progress = false
            for file in pending {
                switch try merge(file) {
                case .merged: progress = true
                case .skipped: break
                case .refused(let error): refused.append((file, error))
                }
            }
            guard progress, !refused.isEmpty else { return refused }
            pending = refused.map(\.file)
        }
    }
}
