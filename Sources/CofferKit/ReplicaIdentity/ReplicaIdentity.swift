import CofferCrypto
import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Replica identity: which replica id this vault file writes as, and the
/// dots it takes. A file copied to another machine or file, restored from
/// a backup, or named by another key holder's claim takes a new id before
/// it writes, so that a dot never stands for two different writes
/// (docs/sync.md, "Restored vault files", "Local-only items"). The façade's
/// forwarders are in ReplicaIdentity/Vault+ReplicaIdentity.swift.
package struct ReplicaIdentity: VaultComponent {
    package let core: VaultCore
}

extension ReplicaIdentity {
    // MARK: Copied vault files

    /// When this vault file is not where its replica id was issued (another
    /// machine's /etc/machine-id, or another inode: copied, or replaced by
    /// a restore), takes a new replica id so that two files never write
    /// under one id. Returns the change, or nil when nothing changed.
    /// Safe to call any time; a fresh id only makes vectors one entry
    /// longer.
    @discardableResult
    func rebindIfCopied(_ db: StoreConnection, _ mac: VaultMAC) throws -> ReplicaRebinding? {
        let local = try Queries.localReplica(db)
        let host = MachineIdentity.host
        let inode = MachineIdentity.inode(of: path)
        if local.boundHost == nil && local.boundInode == nil {
            // Never bound (should not happen): bind without a new id.
            try Queries.bindLocalReplica(db, host: host, inode: inode)
            return nil
        }
        guard let reason = try rebindReason(db, local, host: host, inode: inode) else { return nil }
        let new = ReplicaID.random()
        try Queries.setLocalReplica(db, id: new, host: host, inode: inode, mac: mac)
        try refreshLocalOnlyWriters(db, mac)
        return ReplicaRebinding(old: local.id, new: new, reason: reason)
    }

    /// Why this file no longer owns the replica id it holds, or nil when it
    /// still does (a bound id).
    private func rebindReason(
        _ db: StoreConnection, _ local: LocalReplica, host: String?, inode: Int64?
    ) throws -> ReplicaRebinding.Reason? {
        var reason: ReplicaRebinding.Reason?
        if let bound = local.boundHost, let host, bound != host {
            reason = .otherMachine
        } else if let bound = local.boundInode, let inode, bound != inode {
            reason = .otherFile
        } else if isBehindWriteMark(local) {
            // Replaced in place by an older copy of itself (`cp backup
            // vault.coffer` keeps the inode): the writes it lost used the
            // dots it would take next.
            reason = .restoredInPlace
        } else if try Queries.seenCounter(db, of: local.id) > local.counter {
            // A bundle carried writes under this id that this file never
            // made: another file writes as this replica.
            reason = .reusedElsewhere
        }
        return reason
    }

    package func claimReplica() throws(CofferError) -> ReplicaRebinding? {
        // Nearly always the file still owns its id: a read says so without
        // the write transaction (BEGIN IMMEDIATE, the MAC check, a commit)
        // that taking a new id needs; about 1 ms of every `coffer add`. The
        // write decides again under its lock.
        let owned = try CofferError.wrap {
            try store.read { db -> Bool in
                let local = try Queries.localReplica(db)
                guard local.boundHost != nil || local.boundInode != nil else { return false }
                let reason = try rebindReason(
                    db, local, host: MachineIdentity.host, inode: MachineIdentity.inode(of: path))
                return reason == nil
            }
        }
        if owned { return nil }
        return try CofferError.wrap { try write { db, mac in try rebindIfCopied(db, mac) } }
    }
}

/// A new replica id taken because the vault file was copied or replaced.
public struct ReplicaRebinding: Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// The file is on another machine than where its id was issued.
        case otherMachine
        /// The file is another file (copied, or restored by replacing it).
        case otherFile
        /// A merged bundle held writes under this replica id that this file
        /// never made (a copy that was not detected, or a restored backup).
        case reusedElsewhere
        /// The file's counter is below the one recorded beside it after
        /// its last write: it was replaced in place by an older copy.
        case restoredInPlace
        /// Bundles in the sync folder (or the imported bundle) have seen
        /// more of this replica id than this file ever exported: it is a
        /// restored backup. `moved` writes it made since its last export
        /// were moved to the new id.
        case restored(moved: Int)
        /// A bundle held a version claiming writes of this replica id
        /// beyond any it made (a buggy or hostile key holder, `by` wrote
        /// the bundle). Left as it was, every later write of this replica
        /// would look already seen to the replicas that took the claim; the
        /// `moved` writes no bundle carried yet now carry the new id and
        /// stay beside the claiming version as conflict sides.
        case claimedBeyondCounter(by: ReplicaID, moved: Int)
    }
    public var old: ReplicaID
    public var new: ReplicaID
    public var reason: Reason

    /// One line for people.
    public var message: String {
        let why: String
        switch reason {
        case .otherMachine: why = "was copied from another machine"
        case .otherFile: why = "was copied or replaced (its inode changed)"
        case .reusedElsewhere: why = "shares its replica id with another vault file (a bundle holds writes under it that this file never made)"
        case .restoredInPlace: why = "was restored from an older copy (its write counter went back)"
        case .restored(let moved):
            why =
                "was restored from a backup (the sync folder has seen more of its writes than it ever exported)"
                + (moved > 0 ? "; its \(moved) write\(moved == 1 ? "" : "s") since its last export now carry the new id" : "")
        case .claimedBeyondCounter(let by, let moved):
            return
                "a bundle of replica \(by.hex.prefix(8)) claims writes of this replica (\(old.hex.prefix(8))) that it never made (a buggy or hostile key holder); this vault now writes as replica \(new.hex.prefix(8)) so that its later writes reach every replica"
                + (moved > 0
                    ? ", and its \(moved) write\(moved == 1 ? "" : "s") not yet in a bundle carry the new id and stay beside that bundle's values as conflicts"
                    : "")
        }
        return
            "this vault file \(why); it now writes as replica \(new.hex.prefix(8)) (was \(old.hex.prefix(8))) so that the two copies never reuse one replica id"
    }
}

extension MachineIdentity {
    /// The inode of the file at `path`, or nil when it cannot be read.
    /// Follows symbolic links, like the `stat` at creation
    /// (VaultStore.create), so a vault reached through a link is not taken
    /// for a copy.
    static func inode(of path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(bitPattern: UInt64(st.st_ino))
    }
}

extension ReplicaIdentity {
    /// The next dot of this replica, after making sure the file still owns
    /// its replica id.
    package func nextDot(_ db: StoreConnection, _ mac: VaultMAC) throws -> Dot {
        try rebindIfCopied(db, mac)
        let dot = try Queries.nextDot(db, mac: mac)
        markWriteOnCommit(db, dot: dot)
        return dot
    }
}
