import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Issue 30: a replica publishes a snapshot and immutable delta segments
/// into a sync folder (docs/sync.md, "Snapshots and segments"); what it
/// writes grows with the change, not with the vault, and every receiver
/// still converges whatever the folder lost or holds twice.
@Suite("sync: snapshots and segments")
struct SegmentTests {
    static func open(_ box: BundleSandbox, _ name: String) throws -> Vault {
        try VaultFile.open(path: box.path(name)).unlock(passphrase: box.passphrase)
    }

    static func edit(_ v: Vault, _ name: String, _ value: String) throws {
        var e = ItemEdit()
        e.setFields = [Field(name: "key", value: value, isSecret: true)]
        try v.edit(name, e)
    }

    /// The files of `replica` in `dir`, by name.
    static func files(_ dir: String, of replica: ReplicaID) throws -> [(name: SegmentName, size: Int64)] {
        try FileManager.default.contentsOfDirectory(atPath: dir).compactMap { n in
            guard let s = SegmentName(fileName: n), s.replica == replica else { return nil }
            return (s, Replication.fileSize(dir + "/" + n))
        }.sorted { ($0.name.first, $0.name.last) < ($1.name.first, $1.name.last) }
    }

    /// A's files form one chain: a snapshot, then segments each starting
    /// where the previous one ended.
    static func expectChain(_ files: [(name: SegmentName, size: Int64)], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let first = files.first else {
            Issue.record("no files", sourceLocation: sourceLocation)
            return
        }
        #expect(first.name.isSnapshot, "\(files.map(\.name))", sourceLocation: sourceLocation)
        for (a, b) in zip(files, files.dropFirst()) {
            #expect(!b.name.isSnapshot && b.name.first == a.name.last + 1, "\(files.map(\.name))", sourceLocation: sourceLocation)
        }
    }

    /// A with `items` api keys synced into `dir`, and B cloned from it.
    static func pair(_ box: BundleSandbox, items: Int) throws -> (Vault, Vault, String) {
        let a = try box.newVault("a.coffer")
        for i in 0..<items { try a.add(apiKey("k/\(i)", "value-\(i)")) }
        let dir = box.path("sync")
        try Vault.createSyncFolder(dir)
        _ = try a.sync(dir: dir)
        let snap = try #require(try files(dir, of: a.replicaID()).first)
        _ = try Vault.clone(bundleAt: dir + "/" + snap.name.fileName, to: box.path("b.coffer"), passphrase: box.passphrase)
        return (a, try open(box, "b.coffer"), dir)
    }

    @Test func namesAreStrict() throws {
        let r = ReplicaID.random()
        let n = SegmentName(replica: r, first: 5, last: 12)
        #expect(n.fileName == r.hex + ".0000000005-0000000012.coffer-bundle")
        #expect(SegmentName(fileName: n.fileName) == n)
        #expect(SegmentName(fileName: r.hex + ".0000000000-0000000003.coffer-bundle")?.isSnapshot == true)
        for bad in [
            r.hex + ".coffer-bundle", // the single-bundle name of earlier versions
            r.hex.uppercased() + ".0000000005-0000000012.coffer-bundle",
            r.hex + ".0000000012-0000000005.coffer-bundle", // first after last
            r.hex + ".000000005-0000000012.coffer-bundle", // nine digits
            r.hex + ".00000000x5-0000000012.coffer-bundle",
            r.hex + ".0000000005_0000000012.coffer-bundle",
            r.hex + ".0000000005-0000000012.coffer-bundle.sync-conflict-20240101-123456-ABCDEFG",
            String(r.hex.dropLast()) + "g.0000000005-0000000012.coffer-bundle",
        ] {
            #expect(SegmentName(fileName: bad) == nil, "\(bad)")
        }
    }

    @Test func oneEditWritesOneSmallSegmentAndLeavesTheSnapshotAlone() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 60)
        let me = try a.replicaID()
        let snapshot = try #require(try Self.files(dir, of: me).first)
        let snapshotBytes = box.bytes("sync/" + snapshot.name.fileName)
        try Self.edit(a, "k/7", "changed")
        let r = try a.sync(dir: dir)
        #expect(r.wroteOwnBundle)
        let after = try Self.files(dir, of: me)
        #expect(after.count == 2)
        Self.expectChain(after)
        let segment = after[1]
        #expect(segment.name.first == segment.name.last)
        #expect(segment.size * 10 < snapshot.size, "segment \(segment.size) B, snapshot \(snapshot.size) B")
        #expect(box.bytes("sync/" + snapshot.name.fileName) == snapshotBytes)
        let info = try Vault.inspectBundle(at: dir + "/" + segment.name.fileName)
        #expect(info.header.kind == .delta && info.header.recordCount == 1)
        // A sync with nothing new writes nothing.
        #expect(try Vault.syncIsNoop(file: VaultFile.open(path: box.path("a.coffer")), dir: dir))
        #expect(try !a.sync(dir: dir).wroteOwnBundle)
        _ = try b.sync(dir: dir)
        #expect(try b.item(named: "k/7").field("key")?.value == "changed")
        #expect(try BundleSandbox.dump(b).split(separator: "\n").dropFirst() == BundleSandbox.dump(a).split(separator: "\n").dropFirst())
    }

    @Test func segmentsMergeAndACompactionBoundsTheFolder() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 12)
        let me = try a.replicaID()
        var compactions = 0
        var lastSnapshot = try Self.files(dir, of: me)[0].name
        for step in 1...60 {
            try Self.edit(a, "k/\(step % 12)", "v\(step)")
            _ = try a.sync(dir: dir)
            let files = try Self.files(dir, of: me)
            Self.expectChain(files)
            if files[0].name != lastSnapshot {
                compactions += 1
                lastSnapshot = files[0].name
            }
            // Base 4: at most three segments of each span.
            let spans = Dictionary(grouping: files.dropFirst(), by: { $0.name.last - $0.name.first + 1 })
            #expect(spans.values.allSatisfy { $0.count <= 3 }, "\(files.map(\.name))")
            // At most half a snapshot of segments, plus the newest one.
            let segments = files.dropFirst().map(\.size).reduce(0, +)
            #expect(Double(segments) <= 0.5 * Double(files[0].size) + Double(files.last!.size), "step \(step): \(files.map(\.size))")
            if step % 7 == 0 {
                _ = try b.sync(dir: dir)
                #expect(try b.item(named: "k/\(step % 12)").field("key")?.value == "v\(step)")
            }
        }
        #expect(compactions >= 2, "compactions: \(compactions)")
        _ = try b.sync(dir: dir)
        #expect(try BundleSandbox.dump(b).split(separator: "\n").dropFirst() == BundleSandbox.dump(a).split(separator: "\n").dropFirst())
    }

    @Test func aReplicaOfflineFor150EditsCatchesUp() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 30)
        for step in 1...150 {
            switch step % 5 {
            case 0: try a.add(apiKey("new/\(step)", "n\(step)"))
            case 1 where step > 5: try a.delete("new/\(step - 1)")
            default: try Self.edit(a, "k/\(step % 30)", "v\(step)")
            }
            _ = try a.sync(dir: dir)
        }
        let r = try b.sync(dir: dir)
        #expect(r.failed.isEmpty, "\(r.failed)")
        #expect(try BundleSandbox.dump(b).split(separator: "\n").dropFirst() == BundleSandbox.dump(a).split(separator: "\n").dropFirst())
    }

    @Test func deletedSegmentsAreRefusedClearlyAndTheNextSnapshotHeals() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 20)
        let me = try a.replicaID()
        for step in 1...3 {
            try Self.edit(a, "k/\(step)", "v\(step)")
            _ = try a.sync(dir: dir)
        }
        let files = try Self.files(dir, of: me)
        #expect(files.count == 4)
        try FileManager.default.removeItem(atPath: dir + "/" + files[2].name.fileName)
        let before = try BundleSandbox.dump(b)
        let r = try b.sync(dir: dir)
        let failure = try #require(r.failed.first)
        #expect(failure.path.hasSuffix(files[3].name.fileName))
        #expect(failure.error.kind == .badData)
        #expect(failure.error.message.contains("follow earlier ones this vault has not merged"), "\(failure.error.message)")
        #expect(failure.error.hint?.contains("writes a new snapshot") == true)
        // The segment before the gap merged; the one after it changed nothing.
        #expect(try b.item(named: "k/1").field("key")?.value == "v1")
        #expect(try b.item(named: "k/3").field("key")?.value == "value-3")
        #expect(try BundleSandbox.dump(b) != before)
        // A notices its chain is broken and writes a new snapshot, though
        // nothing changed on A; B then catches up with no failure.
        #expect(try !Vault.syncIsNoop(file: VaultFile.open(path: box.path("a.coffer")), dir: dir))
        let healed = try a.sync(dir: dir)
        #expect(healed.wroteOwnBundle)
        let now = try Self.files(dir, of: me)
        #expect(now.count == 1 && now[0].name.isSnapshot && now[0].name.last > files[3].name.last, "\(now.map(\.name))")
        let again = try b.sync(dir: dir)
        #expect(again.failed.isEmpty, "\(again.failed)")
        #expect(try BundleSandbox.dump(b).split(separator: "\n").dropFirst() == BundleSandbox.dump(a).split(separator: "\n").dropFirst())
    }

    @Test func filesLeftByAnInterruptedCompactionAreSkippedThenRemoved() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 10)
        let me = try a.replicaID()
        // Three segments of span 1; the fourth publication merges them.
        for step in 1...3 {
            try Self.edit(a, "k/\(step)", "v\(step)")
            _ = try a.sync(dir: dir)
        }
        let three = try Self.files(dir, of: me)
        #expect(three.count == 4)
        let saved = three.dropFirst().map { ($0.name.fileName, box.bytes("sync/" + $0.name.fileName)) }
        try Self.edit(a, "k/4", "v4")
        _ = try a.sync(dir: dir)
        let merged = try Self.files(dir, of: me)
        #expect(merged.count == 2 && merged[1].name.first == three[1].name.first && merged[1].name.last == three[3].name.last + 1)
        // The removals never happened (a crash, or a copy that has not
        // caught up): the receiver merges what it needs and is not misled.
        for (name, bytes) in saved { box.write("sync/" + name, bytes) }
        let r = try b.sync(dir: dir)
        #expect(r.failed.isEmpty, "\(r.failed)")
        #expect(try b.item(named: "k/4").field("key")?.value == "v4")
        // A's next sync removes them without writing anything new.
        #expect(try !Vault.syncIsNoop(file: VaultFile.open(path: box.path("a.coffer")), dir: dir))
        let cleanup = try a.sync(dir: dir)
        #expect(!cleanup.wroteOwnBundle)
        #expect(try Self.files(dir, of: me).map(\.name) == merged.map(\.name))
    }

    @Test func anotherReplicasOlderSnapshotIsSkippedAsReplaced() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 4)
        let me = try a.replicaID()
        /// A large note makes the publication after it a compaction.
        func compact(_ step: Int) throws -> OwnSnapshot {
            try a.add(note("big\(step)", size: 20_000, seed: step))
            _ = try a.sync(dir: dir)
            try Self.edit(a, "k/1", "after\(step)")
            _ = try a.sync(dir: dir)
            let now = try Self.files(dir, of: me)
            #expect(now.count == 1 && now[0].name.isSnapshot, "\(now.map(\.name))")
            return OwnSnapshot(name: now[0].name, bytes: box.bytes("sync/" + now[0].name.fileName))
        }
        let older = try compact(1)
        let newer = try compact(2)
        #expect(newer.name.last > older.name.last)
        // The older snapshot is back (a sync tool that has not caught up
        // with the removal): B, which has neither, merges only the newer.
        box.write("sync/" + older.name.fileName, older.bytes)
        let r = try b.sync(dir: dir)
        #expect(r.skipped.contains { $0.path.hasSuffix(older.name.fileName) && $0.reason == .replaced }, "\(r.skipped)")
        #expect(r.merged.map { ($0.path as NSString).lastPathComponent } == [newer.name.fileName])
        #expect(try b.item(named: "k/1").field("key")?.value == "after2")
    }

    /// Someone with write access to the folder (but no key) renames an old
    /// snapshot of A to a name numbered above everything: receivers must
    /// not skip A's newer files for it.
    @Test func aRenamedOldSnapshotDoesNotHideNewerFiles() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 6)
        let me = try a.replicaID()
        let old = try Self.files(dir, of: me)[0].name
        let oldBytes = box.bytes("sync/" + old.fileName)
        try Self.edit(a, "k/2", "newer")
        _ = try a.sync(dir: dir)
        box.write("sync/" + SegmentName(replica: me, first: 0, last: SegmentName.maxNumber).fileName, oldBytes)
        let r = try b.sync(dir: dir)
        #expect(r.failed.isEmpty, "\(r.failed)")
        #expect(try b.item(named: "k/2").field("key")?.value == "newer")
    }

    struct OwnSnapshot {
        var name: SegmentName
        var bytes: [UInt8]
    }

    @Test func aFileNamedAsOursButEditedIsReplacedByASnapshot() throws {
        let box = BundleSandbox()
        let (a, _, dir) = try Self.pair(box, items: 5)
        let me = try a.replicaID()
        try Self.edit(a, "k/1", "v1")
        _ = try a.sync(dir: dir)
        // Someone flips a byte in A's newest segment: A does not compute
        // its next segment against it, but starts again from a snapshot.
        let files = try Self.files(dir, of: me)
        var bytes = box.bytes("sync/" + files[1].name.fileName)
        bytes[bytes.count - 5] ^= 0x40
        box.write("sync/" + files[1].name.fileName, bytes)
        try Self.edit(a, "k/2", "v2")
        _ = try a.sync(dir: dir)
        let now = try Self.files(dir, of: me)
        #expect(now.count == 1 && now[0].name.isSnapshot, "\(now.map(\.name)) from \(files.map(\.name))")
        let c = box.path("c.coffer")
        _ = try Vault.clone(bundleAt: dir + "/" + now[0].name.fileName, to: c, passphrase: box.passphrase)
        #expect(try Self.open(box, "c.coffer").item(named: "k/2").field("key")?.value == "v2")
    }

    /// Random edits, deletes, adds and syncs on three replicas, then two
    /// rounds of syncs: every replica converges, and the last write of each
    /// name survives (as the value or a conflict side) unless the name was
    /// deleted somewhere.
    static func exercise(_ replicas: [Vault], steps: Int, seed: UInt64, sync: (Vault) throws -> Void) throws {
        var rng = SeededGenerator(seed: seed)
        // The last write of each name, in the order of the steps: nothing
        // written later can have seen it, so it must survive (as the value
        // or as a conflict side) unless the name was deleted somewhere.
        var lastWrite: [String: String] = [:]
        var deleted: Set<String> = []
        var added: [String: String] = [:]
        for step in 0..<steps {
            let v = replicas[Int(rng.next() % 3)]
            let name = "k/\(rng.next() % 12)"
            let exists = (try? v.item(named: name)) != nil
            switch rng.next() % 10 {
            case 0:
                guard exists else { continue }
                try v.delete(name)
                deleted.insert(name)
            case 1, 2:
                try sync(v)
            case 3:
                try v.add(apiKey("n/\(step)", "a\(step)"))
                added["n/\(step)"] = "a\(step)"
            default:
                guard exists else { continue }
                try Self.edit(v, name, "s\(step)")
                lastWrite[name] = "s\(step)"
            }
        }
        for _ in 0..<2 {
            for v in replicas {
                try sync(v)
            }
        }
        let dumps = try replicas.map { try BundleSandbox.dump($0).split(separator: "\n").dropFirst() }
        #expect(dumps[0] == dumps[1] && dumps[1] == dumps[2])
        for (name, value) in lastWrite where !deleted.contains(name) {
            let item = try replicas[0].item(named: name)
            let sides = item.conflicts.flatMap { $0.sides.compactMap(\.value) }
            #expect(item.field("key")?.value == value || sides.contains(value), "\(name): wrote \(value), have \(item.fields) \(sides)")
        }
        for (name, value) in added {
            #expect(try replicas[2].item(named: name).field("key")?.value == value)
        }
    }

    /// Three replicas, 200 random edits, deletes and concurrent edits with
    /// syncs in between (compactions happen along the way): every replica
    /// converges, no write is lost.
    @Test func threeReplicasConvergeOverTwoHundredRandomChanges() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 8)
        let snap = try #require(try Self.files(dir, of: a.replicaID()).first)
        _ = try Vault.clone(bundleAt: dir + "/" + snap.name.fileName, to: box.path("c.coffer"), passphrase: box.passphrase)
        let c = try Self.open(box, "c.coffer")
        try Self.exercise([a, b, c], steps: 200, seed: 30) { v in
            let r = try v.sync(dir: dir)
            #expect(r.failed.isEmpty, "\(r.failed)")
        }
        for v in [a, b, c] { Self.expectChain(try Self.files(dir, of: v.replicaID())) }
    }

    static let hasGit = FileManager.default.isExecutableFile(atPath: "/usr/bin/git")

    static func git(_ args: [String], in dir: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        p.arguments = ["-C", dir] + args
        p.environment = ProcessInfo.processInfo.environment.merging(["GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"]) { $1 }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "git \(args)")
    }

    /// The same through a bare git repository, each replica in its own
    /// work tree with `sync --git` (fetch, rebase, push): every replica
    /// converges, and the history holds only snapshots and segments.
    @Test(.enabled(if: hasGit, "git is not installed")) func threeReplicasConvergeThroughABareGitRepository() throws {
        let box = BundleSandbox()
        let (a, b, dir) = try Self.pair(box, items: 8)
        let snap = try #require(try Self.files(dir, of: a.replicaID()).first)
        _ = try Vault.clone(bundleAt: dir + "/" + snap.name.fileName, to: box.path("c.coffer"), passphrase: box.passphrase)
        let c = try Self.open(box, "c.coffer")
        let bare = box.path("remote.git")
        try Self.git(["init", "-q", "--bare", bare], in: box.dir.path)
        var trees: [ReplicaID: String] = [:]
        for (v, name) in [(a, "wa"), (b, "wb"), (c, "wc")] {
            try Self.git(["clone", "-q", bare, box.path(name)], in: box.dir.path)
            trees[try v.replicaID()] = box.path(name)
        }
        try Self.exercise([a, b, c], steps: 90, seed: 31) { v in
            let tree = try #require(trees[try v.replicaID()])
            let r = try v.syncGit(dir: tree)
            #expect(r.rounds.allSatisfy { $0.failed.isEmpty }, "\(r.rounds.flatMap(\.failed))")
        }
        for v in [a, b, c] {
            let tree = try #require(trees[try v.replicaID()])
            Self.expectChain(try Self.files(tree, of: v.replicaID()))
            let names = try FileManager.default.contentsOfDirectory(atPath: tree).filter { $0 != ".git" }
            #expect(names.allSatisfy { SegmentName(fileName: $0) != nil }, "\(names)")
        }
    }
}
