import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// Giving writes that no other replica has seen new dots, so that a dot is
/// never used for two different writes (docs/sync.md, "Restored vault
/// files" and "Local-only items").
extension ReplicaIdentity {
    /// Moves every current version of `items` written by `from` with a
    /// counter above `floor` to a dot of `to`: the distinct counters, in
    /// order, become `base + 1`, `base + 2`, …. A moved version's vector
    /// claims of `from` no more than `floor` and, of `to`, the moved writes
    /// it had seen. Values and write times stay; every moved version is
    /// sealed again under its new dot. Returns the highest new counter
    /// (`base` when nothing moved).
    ///
    /// Only writes no other replica has seen may be moved: the caller
    /// knows that every write of `from` above `floor` held here is unseen
    /// elsewhere (or is a different write under a reused dot).
    func renumber(_ db: StoreConnection, items: [ItemID], from: ReplicaID, floor: UInt64, to: ReplicaID, base: UInt64, mac: VaultMAC) throws -> UInt64 {
        var states: [(ItemRow, ItemState)] = []
        var counters = Set<UInt64>()
        for id in items {
            guard let (row, state, _) = try loadItem(db, id: id) else { continue }
            for versions in state.registers.values {
                for v in versions where v.dot.replica == from && v.dot.counter > floor { counters.insert(v.dot.counter) }
            }
            states.append((row, state))
        }
        let moved = counters.sorted()
        guard !moved.isEmpty else { return base }
        // Number of moved counters ≤ c.
        func rank(_ c: UInt64) -> UInt64 {
            var lo = 0
            var hi = moved.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if moved[mid] <= c { lo = mid + 1 } else { hi = mid }
            }
            return UInt64(lo)
        }
        let now = Clock.nowMillis()
        for (row, old) in states {
            var new = old
            var changed = false
            for (rid, versions) in old.registers {
                var out: [FieldVersion] = []
                for v in versions {
                    guard v.dot.replica == from, v.dot.counter > floor else {
                        out.append(v)
                        continue
                    }
                    let payload = try open(v, item: old.id, register: rid)
                    var vector = v.vector
                    let claimed = vector[from]
                    if claimed > floor {
                        vector[from] = floor
                        vector[to] = max(vector[to], base + rank(claimed))
                    }
                    let dot = Dot(replica: to, counter: base + rank(v.dot.counter))
                    vector[to] = max(vector[to], dot.counter)
                    out.append(seal(payload, item: old.id, register: rid, dot: dot, vector: vector, at: v.writtenAt, tombstone: v.isTombstone))
                    changed = true
                }
                new.registers[rid] = out.sorted { $0.dot < $1.dot }
            }
            guard changed else { continue }
            let derived = try derivedRow(for: new, policy: row.policy, createdAt: row.createdAt, updatedAt: row.updatedAt)
            try save(db, row: derived, old: old, new: new, now: now, mac: mac)
        }
        return base + UInt64(moved.count)
    }

    // MARK: Local-only items

    /// The dot for a write to item `id` whose policy after the write is
    /// `policy`. A local-only item writes under its private writer id, so
    /// that no bundle this replica exports meanwhile claims the write; it
    /// reaches others with the item once the item syncs again.
    func nextDot(_ db: StoreConnection, item id: ItemID, policy: SyncPolicy, mac: VaultMAC) throws -> Dot {
        guard policy == .localOnly else { return try nextDot(db, mac) }
        try rebindIfCopied(db, mac)
        let writer: ReplicaID
        if let w = try Queries.localOnlyWriter(db, item: id) {
            writer = w
        } else {
            writer = .random()
            try Queries.setLocalOnlyWriter(db, item: id, replica: writer, mac: mac)
        }
        return try Queries.nextDot(db, replica: writer, mac: mac)
    }

    /// Called in the write that changes an item's policy from `old` to
    /// `new` (before the write's own changes are applied). Turning an
    /// item local-only gives it a fresh private writer and moves to it the
    /// item's writes this replica has not put in a bundle yet (nobody else
    /// has them, so they may change dots), so that no later bundle claims
    /// them while the item is left out. Turning it back to `sync` needs
    /// nothing: its versions keep their dots and travel in the next bundle
    /// like any others, as if the item had synced all along.
    func changePolicy(_ db: StoreConnection, item id: ItemID, from old: SyncPolicy, to new: SyncPolicy, mac: VaultMAC) throws {
        guard old != new else { return }
        if new == .sync {
            try Queries.removeLocalOnlyWriter(db, item: id, mac: mac)
            // The switch takes a counter of the vault's own id (no version
            // carries it): the private writer's dots now get published, and
            // a copy of this file from before the switch is then behind its
            // write mark and behind the folder (docs/sync.md, "Limits").
            _ = try nextDot(db, mac)
            return
        }
        let writer = ReplicaID.random()
        try Queries.setLocalOnlyWriter(db, item: id, replica: writer, mac: mac)
        let local = try Queries.localReplica(db)
        let top = try renumber(db, items: [id], from: local.id, floor: try Queries.exportedCounter(db), to: writer, base: 0, mac: mac)
        if top > 0 { try Queries.setSeen(db, replica: writer, counter: top, mac: mac) }
    }
}

// MARK: Restored vault files

/// Gathered before an adoption: the highest counter of this replica id
/// the bundles claim, and the highest one they hold with the same
/// ciphertext as this file (see ``Vault/adoptIfRestored(seen:bundles:)``).
struct RestoreCheck {
    var seen: UInt64
    var shared: UInt64
    /// Set when the claim is a version's vector that no summary backs (a
    /// key holder's forged claim, not a restored file): the bundle's writer.
    var claimedBy: ReplicaID? = nil
}

/// A small file beside the vault, `.<vault name>.written`, holding the
/// replica id and the highest counter any write through this path has
/// committed. A vault file restored in place from an older copy (`cp
/// backup vault.coffer` keeps the inode) has a lower counter than this
/// file says: its next write would reuse a dot, so it takes a new replica
/// id first. Holds no secret; written after each committed write.
enum WriteMark {
    static func path(forVault vault: String) -> String {
        let dir = (vault as NSString).deletingLastPathComponent
        let base = (vault as NSString).lastPathComponent
        return (dir.isEmpty ? "" : dir + "/") + "." + base + ".written"
    }

    /// The counter recorded for `replica`, or nil (no file, another id,
    /// unreadable).
    static func read(vault: String, replica: ReplicaID) -> UInt64? {
        guard let text = try? String(contentsOfFile: path(forVault: vault), encoding: .utf8) else { return nil }
        let parts = text.split(whereSeparator: \.isWhitespace)
        guard parts.count == 2, parts[0] == replica.hex, let n = UInt64(parts[1]) else { return nil }
        return n
    }

    /// Records `counter` for `replica` unless a higher one is recorded.
    static func record(vault: String, replica: ReplicaID, counter: UInt64) {
        if let old = read(vault: vault, replica: replica), old >= counter { return }
        let p = path(forVault: vault)
        let tmp = p + ".tmp-\(Hex.encode(Random.bytes(4)))"
        let fd = Glibc.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        // Held until the rename: a temporary nobody holds belongs to a
        // writer that died (``sweep(vault:)``).
        _ = flock(fd, LOCK_EX)
        let line = Array("\(replica.hex) \(counter)\n".utf8)
        let ok = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == line.count
        if !ok || rename(tmp, p) != 0 { unlink(tmp) }
        close(fd)
    }

    /// Removes temporaries of the write mark left by a writer killed before
    /// its rename (issue 13: no litter survives the next command). One that
    /// another process still holds locked is left alone. Called whenever a
    /// vault is opened; costs one listing of the vault's folder.
    static func sweep(vault: String) {
        // Plain string work and readdir(3): this runs on every command,
        // and NSString's path methods and FileManager's listing cost a
        // `coffer get` more than the folder's few entries (docs/benchmarks.md).
        let slash = vault.lastIndex(of: "/")
        let dir = slash.map { $0 == vault.startIndex ? "/" : String(vault[..<$0]) } ?? ""
        let base = slash.map { String(vault[vault.index(after: $0)...]) } ?? vault
        let prefix = "." + base + ".written.tmp-"
        guard let folder = opendir(dir.isEmpty ? "." : dir) else { return }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            if name.hasPrefix(prefix) { names.append(name) }
        }
        closedir(folder)
        for name in names {
            let p = (dir.isEmpty ? "" : dir == "/" ? "/" : dir + "/") + name
            let fd = Glibc.open(p, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var st = stat()
            if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) == 0 {
                unlink(p)
            }
            close(fd)
        }
    }
}

extension ReplicaIdentity {
    /// Registers, inside a write transaction that took `dot` of the local
    /// replica, that the write mark is raised once it commits.
    func markWriteOnCommit(_ db: StoreConnection, dot: Dot) {
        let vault = path
        Queries.onCommit(db) { WriteMark.record(vault: vault, replica: dot.replica, counter: dot.counter) }
    }

    /// Whether this file's counter is below the write mark beside it (the
    /// file was replaced by an older copy of itself).
    func isBehindWriteMark(_ local: LocalReplica) -> Bool {
        guard let mark = WriteMark.read(vault: path, replica: local.id) else { return false }
        return mark > local.counter
    }

    /// The highest counter of `replica` that the headers in a sync folder
    /// (or one bundle) claim to have seen.
    static func seenOwn(_ headers: [BundleHeader], replica: ReplicaID) -> UInt64 {
        headers.map { $0.summary[replica] }.max() ?? 0
    }

    /// When bundles (whose headers claim `seen` of this replica id) have
    /// seen more of this replica's writes than this file ever put in a
    /// bundle, another file wrote under this id: this one is a restored
    /// backup (or an undetected copy). Before anything else is written or
    /// merged, this file takes a new replica id, and its writes that no
    /// bundle of its own carried (they may reuse dots the other file
    /// published with other contents) move to the new id. The summary
    /// forgets the old id's writes above what this file exported, so the
    /// other file's writes are merged, not skipped. Nothing is lost: both
    /// files' writes survive, side by side where they touch the same field.
    ///
    /// `bundles` are the bundles the other file's writes may be in: a
    /// write of this file that one of them holds with the very same
    /// ciphertext is not a reused dot (it was made before the backup was
    /// taken and exported by the other file later), so writes up to the
    /// highest such dot keep their dots and do not come back as
    /// duplicates.
    func adoptIfRestored(seen: UInt64, bundles: [String] = []) throws(CofferError) -> ReplicaRebinding? {
        guard let check = try restoreCheck(seen: seen, bundles: bundles) else { return nil }
        return try CofferError.wrap { try write { db, mac in try adopt(db, mac, check) } }
    }

    /// What ``adopt(_:_:_:)`` needs, gathered outside the write
    /// transaction (reading bundles takes time); nil in the usual case
    /// (nothing seen beyond what this file exported).
    func restoreCheck(seen: UInt64, bundles: [String]) throws(CofferError) -> RestoreCheck? {
        let (exported, local) = try CofferError.wrap { try store.read { db in (try Queries.exportedCounter(db), try Queries.localReplica(db)) } }
        guard seen > exported else { return nil }
        return RestoreCheck(
            seen: seen, shared: highestSharedOwnDot(in: bundles, replica: local.id, above: exported, upTo: local.counter))
    }

    /// The restored-backup case of ``adoptIfRestored(seen:bundles:)``
    /// inside a write transaction (the caller's: an import adopts in its
    /// own transaction, so a refused bundle changes nothing).
    func adopt(_ db: StoreConnection, _ mac: VaultMAC, _ check: RestoreCheck) throws -> ReplicaRebinding? {
        let local = try Queries.localReplica(db)
        let exported = try Queries.exportedCounter(db)
        guard check.seen > exported else { return nil }
        let floor = max(exported, min(check.shared, local.counter))
        let new = ReplicaID.random()
        let moved = try renumber(
            db, items: try Queries.itemsWithVersions(db, replica: local.id, above: floor), from: local.id,
            floor: floor, to: new, base: 0, mac: mac)
        try Queries.setSeen(db, replica: local.id, counter: floor, mac: mac)
        try Queries.setLocalReplica(db, id: new, host: MachineIdentity.host, inode: MachineIdentity.inode(of: path), mac: mac)
        try Queries.renumberLocalReplica(db, id: new, counter: moved, mac: mac)
        try refreshLocalOnlyWriters(db, mac)
        if let by = check.claimedBy {
            return ReplicaRebinding(old: local.id, new: new, reason: .claimedBeyondCounter(by: by, moved: Int(moved)))
        }
        return ReplicaRebinding(old: local.id, new: new, reason: .restored(moved: Int(moved)))
    }

    /// The highest counter `k` in (`above`, `upTo`] such that a version
    /// with dot (`replica`, k) is held here and, with the same ciphertext,
    /// in one of `bundles` (`above` when none). Bundles that cannot be read
    /// are passed over: this only avoids duplicates.
    func highestSharedOwnDot(in bundles: [String], replica: ReplicaID, above: UInt64, upTo: UInt64) -> UInt64 {
        var best = above
        guard upTo > above else { return best }
        for path in bundles {
            guard let input = try? BundleFileInput(path: path), let (header, prefix) = try? BundleHeader.read(from: input),
                header.vaultID == vaultID, header.summary[replica] > best,
                let reader = try? BundleReader(header: header, prefix: prefix, input: input, bundleKey: keys.bundle)
            else { continue }
            while let record = try? reader.next() {
                var wanted: [(RegisterID, FieldVersion)] = []
                for (rid, versions) in record.registers {
                    for v in versions where v.dot.replica == replica && v.dot.counter > best && v.dot.counter <= upTo { wanted.append((rid, v)) }
                }
                guard !wanted.isEmpty, let held = try? store.read({ db in try Queries.itemState(db, id: record.id) }) else { continue }
                for (rid, v) in wanted where (held.registers[rid] ?? []).contains(where: { $0.dot == v.dot && $0.payload == v.payload }) {
                    best = max(best, v.dot.counter)
                }
            }
        }
        return best
    }

    /// Gives every local-only item a new private writer (after the file
    /// took a new replica id: a copy must not write under the original's
    /// private ids either).
    func refreshLocalOnlyWriters(_ db: StoreConnection, _ mac: VaultMAC) throws {
        for item in try Queries.localOnlyWriterItems(db) {
            try Queries.setLocalOnlyWriter(db, item: item, replica: .random(), mac: mac)
        }
    }
}

extension ReplicaIdentity {
    /// Records that a bundle carrying this replica's writes up to
    /// `counter` was written. Best effort: when it cannot be recorded, a
    /// later sync may take this file for a restored one and give its
    /// newest writes a new id, which loses nothing.
    func noteExported(replica: ReplicaID, counter: UInt64) {
        _ = try? write { db, mac in try Queries.noteExported(db, replica: replica, counter: counter, mac: mac) }
    }
}
