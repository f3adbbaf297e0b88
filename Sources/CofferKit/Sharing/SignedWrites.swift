import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// Signed writes (docs/sharing.md, "Signed writes"; bundle format 6): the
/// receiver's rules `unsigned-in-shared-vault`, `publication-counter`,
/// `replica-binding`, `forwarded-dot` and `signer-member`, and the
/// writer's publication counter. The signature itself (rule `signature`)
/// is checked by ``BundleReader`` in the pass that reads the file.

/// A member as one transaction reads the membership: role and name by
/// Ed25519 key.
struct RosterEntry: Sendable {
    var name: String
    var role: VaultMember.Role
}

/// Versions a signed import left out (rule `forwarded-dot`), counted on
/// the decoding thread.
final class ForwardedSkips: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [ReplicaID: Int] = [:]

    func note(_ replica: ReplicaID, _ n: Int) {
        lock.lock()
        counts[replica, default: 0] += n
        lock.unlock()
    }

    var all: [ReplicaID: Int] {
        lock.lock()
        defer { lock.unlock() }
        return counts
    }
}

/// What a signed import (or an unsigned one into a vault without members)
/// checks and records, set up in the import's transaction before any
/// record is merged.
struct SignedImport: Sendable {
    let header: BundleHeader
    let path: String
    /// The signer's Ed25519 key; nil for an unsigned bundle.
    let signKey: [UInt8]?
    /// Replica id → member key, as held before the import.
    let bindings: [ReplicaID: [UInt8]]
    /// Member key → union of the summaries of its accepted bundles.
    let accepted: [[UInt8]: VersionVector]
    /// What this vault had seen before the import.
    let seen: VersionVector
    /// The membership as this vault held it before the import: a signer
    /// must already be a read-write member in it (unless it was empty), so
    /// that no bundle makes its own signer a member.
    let before: [[UInt8]: RosterEntry]
    let skips = ForwardedSkips()

    init(header: BundleHeader, path: String, db: StoreConnection, roster: [[UInt8]: RosterEntry]) throws {
        self.header = header
        self.path = path
        signKey = header.publisher
        seen = try Queries.summary(db)
        before = roster
        guard let key = header.publisher else {
            bindings = [:]
            accepted = [:]
            // An unsigned bundle (format 5 or older) cannot say who wrote
            // it: a vault with members takes none (a vault that has none
            // yet takes it, as before sharing).
            if !roster.isEmpty {
                throw CofferError(
                    .badData,
                    "\(path) breaks the bundle rule \(BundleRule.unsignedInSharedVault.rawValue) (\(BundleRule.unsignedInSharedVault.summary)): it is an unsigned bundle (format \(header.formatVersion)) and this vault has members",
                    hint:
                        "the replica that wrote it has no member identity of this vault: give it an identity and have a member add it (docs/sharing.md); nothing was imported"
                )
            }
            return
        }
        let publishers = try Queries.publishers(db)
        var accepted: [[UInt8]: VersionVector] = [:]
        for p in publishers { accepted[p.signKey] = p.summary }
        self.accepted = accepted
        bindings = try Queries.replicaBindings(db)
        let name = roster[key]?.name
        // Below the last accepted counter: an older file of that member.
        // Equal: the file last accepted (or one signed with the same
        // counter by that member), merged again: a no-op, as a bundle
        // imported twice always was.
        if let last = publishers.first(where: { $0.signKey == key }), header.publication < last.counter {
            throw Self.olderPublication(path: path, counter: header.publication, last: last.counter, who: Self.who(name, key))
        }
        if let bound = bindings[header.replicaID], bound != key {
            throw CofferError.bundle(
                .ruleBroken(
                    .replicaBinding,
                    "its replica \(header.replicaID.hex.prefix(8))… belongs to \(Self.who(roster[bound]?.name, bound)), but it is signed by \(Self.who(name, key))"
                ),
                path: path)
        }
    }

    /// Rule `publication-counter` broken by a receiver's record: `path`
    /// is an older file of a member than one this vault accepted (import
    /// and sync say the same).
    static func olderPublication(path: String, counter: UInt64, last: UInt64, who: String) -> CofferError {
        CofferError(
            .badData,
            "\(path) breaks the bundle rule \(BundleRule.publicationCounter.rawValue) (\(BundleRule.publicationCounter.summary)): its publication counter \(counter) is below \(last), the last this vault accepted from \(who): the folder or the remote served an older file of that member (rolled back or replayed)",
            remedy: .init(
                .restoreNewerFiles,
                "nothing of it was imported; put that member's newer files back (a git remote reset to an older commit: push the newer commit again), or have that member sync again (docs/sharing.md, \"Signed writes\")",
                path: path))
    }

    static func who(_ name: String?, _ key: [UInt8]) -> String {
        if let name { return "member '\(name)'" }
        return "the key \(key.prefix(4).map { String(format: "%02x", $0) }.joined())… (no member)"
    }

    /// Whether the versions of replica `r` may come in a bundle of this
    /// signer: `r` is the bundle's own replica or bound to the signer.
    private func isSigners(_ r: ReplicaID) -> Bool {
        guard let key = signKey else { return true }
        return r == header.replicaID || bindings[r] == key
    }

    /// Rule `forwarded-dot`: the versions of `state` (already without the
    /// ones this vault has seen) that the signer may carry — its own
    /// replicas' and, of another member's replica, those covered by a
    /// bundle of that member this vault accepted. The others are left out
    /// (they arrive from their writer's own files) and counted.
    func filter(_ state: ItemState) -> ItemState {
        guard signKey != nil else { return state }
        var out = state
        var changed = false
        for (rid, versions) in state.registers {
            var kept: [FieldVersion] = []
            for v in versions {
                if isSigners(v.dot.replica) {
                    kept.append(v)
                } else if let owner = bindings[v.dot.replica], let summary = accepted[owner], summary.contains(v.dot) {
                    kept.append(v)
                } else {
                    skips.note(v.dot.replica, 1)
                    changed = true
                }
            }
            if kept.count != versions.count { out.registers[rid] = kept.isEmpty ? nil : kept }
        }
        return changed ? out : state
    }

    /// The summary to record after the import: for a replica whose versions
    /// the signer may not carry, no more than this vault had seen or a
    /// bundle of that replica's member showed (lowering a claim is safe:
    /// only versions already held are merged again).
    func capped(_ summary: VersionVector) -> VersionVector {
        guard signKey != nil else { return summary }
        var out = summary
        for e in summary.entries where !isSigners(e.replica) {
            var allowed = seen[e.replica]
            if let owner = bindings[e.replica], let s = accepted[owner] { allowed = max(allowed, s[e.replica]) }
            if e.counter > allowed { out[e.replica] = allowed }
        }
        return out
    }

    /// Rule `signer-member`, against the membership as it stands after the
    /// merge (the bundle's own changes merged): the signer's member name,
    /// or nil for an unsigned bundle.
    func checkSigner(roster: [[UInt8]: RosterEntry]) throws -> String? {
        guard let key = signKey else { return nil }
        guard let member = roster[key] else {
            throw CofferError(
                .badData,
                "\(path) breaks the bundle rule \(BundleRule.signerMember.rawValue) (\(BundleRule.signerMember.summary)): it is signed by \(Self.who(nil, key)) of this vault (never added, or removed)",
                hint: "only members' bundles are imported; nothing was imported (docs/sharing.md, \"Signed writes\")")
        }
        guard member.role == .readWrite else {
            throw CofferError(
                .badData,
                "\(path) breaks the bundle rule \(BundleRule.signerMember.rawValue) (\(BundleRule.signerMember.summary)): it is signed by member '\(member.name)', who is read-only",
                hint: "a read-only member's writes are refused by every replica; nothing was imported")
        }
        // The membership after the merge holds the bundle's own changes:
        // a removed member who adds itself back, a read-only member who
        // makes itself read-write, or a holder of the passphrase who adds
        // an identity of its own would all pass the check above. So the
        // signer must have been a read-write member before this bundle too
        // (a vault with no members yet takes the first member's bundle).
        if !before.isEmpty, before[key]?.role != .readWrite {
            let was = before[key].map { "read-only member '\($0.name)'" } ?? "not a member"
            throw CofferError(
                .badData,
                "\(path) breaks the bundle rule \(BundleRule.signerMember.rawValue) (\(BundleRule.signerMember.summary)): it is signed by member '\(member.name)', who was \(was) of this vault before this bundle and made itself one with this bundle's own change to the membership",
                hint:
                    "a member is added or made read-write by another member, from their own replica; nothing was imported (docs/sharing.md, \"Signed writes\")")
        }
        return member.name
    }

    /// After the merge, in the same transaction: ``checkSigner(roster:)``,
    /// then the signer's counter, summary and replica binding.
    func finish(_ db: StoreConnection, mac: VaultMAC, roster: [[UInt8]: RosterEntry], recorded: VersionVector) throws -> String? {
        guard let key = signKey, let name = try checkSigner(roster: roster) else { return nil }
        let old = try Queries.publisher(db, signKey: key)
        try Queries.setPublisher(
            db,
            PublisherRecord(
                signKey: key, counter: max(header.publication, old?.counter ?? 0),
                summary: (old?.summary ?? VersionVector()).merged(with: recorded)),
            mac: mac)
        if bindings[header.replicaID] == nil { try Queries.bindReplica(db, header.replicaID, signKey: key, mac: mac) }
        return name
    }
}

extension Replication {
    /// The membership as the transaction `db` holds it: each member's
    /// Ed25519 key with its name and role (the rules of
    /// ``Sharing/membership(validating:)``: a removal among a field's
    /// concurrent versions wins; of several registry items, the oldest wins
    /// a name).
    /// `overlay`: a dry run's merged states, read in place of the stored
    /// ones (and its new items, when one is a members registry).
    func roster(_ db: StoreConnection, overlay: [ItemID: Overlay] = [:]) throws -> [[UInt8]: RosterEntry] {
        let hash = KeyHierarchy.nameHash(Sharing.membersItemName, nameKey: keys.nameIndex)
        let ids = try Queries.itemIDs(db, nameHash: hash)
        var items: [(id: ItemID, createdAt: Int64, state: ItemState)] = []
        for id in ids {
            if let o = overlay[id] {
                items.append((id, o.row?.createdAt ?? .max, o.state))
                continue
            }
            guard let (row, state, record) = try loadItem(db, id: id), record.name == Sharing.membersItemName else { continue }
            items.append((id, row.createdAt, state))
        }
        for (id, o) in overlay where !ids.contains(id) {
            guard let v = Register.shown(o.state.registers[.name] ?? []), !v.isTombstone,
                try open(v, item: id, register: .name).text == Sharing.membersItemName
            else { continue }
            items.append((id, o.row?.createdAt ?? .max, o.state))
        }
        guard !items.isEmpty else { return [:] }
        items.sort { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        var byName: [String: (MemberPublicKey, VaultMember.Role)?] = [:]
        for (id, _, state) in items where !state.isDeleted {
            for (rid, versions) in state.registers where !rid.isMetadata {
                guard let first = versions.first else { continue }
                let name = try open(first, item: id, register: rid).name
                guard byName[name] == nil else { continue }
                if versions.contains(where: \.isTombstone) {
                    byName[name] = .some(nil)
                    continue
                }
                guard let shown = Register.shown(versions) else { continue }
                byName[name] = .some(Sharing.parseEntry(try open(shown, item: id, register: rid).text, validating: false))
            }
        }
        var out: [[UInt8]: RosterEntry] = [:]
        for (name, entry) in byName {
            guard let (key, role) = entry ?? nil else { continue }
            out[key.signKey] = RosterEntry(name: name, role: role)
        }
        return out
    }

    /// The member name of each replica id bound to a member (attribution);
    /// empty for a vault without members.
    /// `ownKey`: this replica's identity's key (``ownSignKey()``, read
    /// outside the transaction), which names this replica's own writes.
    func replicaMembers(_ db: StoreConnection, ownKey: [UInt8]?) throws -> [ReplicaID: String] {
        let bindings = try Queries.replicaBindings(db)
        let roster = try self.roster(db)
        var out: [ReplicaID: String] = [:]
        if let me = ownKey, let name = roster[me]?.name { out[try Queries.localReplica(db).id] = name }
        for (r, key) in bindings { if let name = roster[key]?.name { out[r] = name } }
        return out
    }

    /// ``replicaMembers(_:ownKey:)`` in a read of its own.
    func memberNamesByReplica() throws(CofferError) -> [ReplicaID: String] {
        let ownKey = try ownSignKey()
        return try CofferError.wrap { try store.read { db in try replicaMembers(db, ownKey: ownKey) } }
    }

    /// Whether this replica's identity is a read-only member of the vault
    /// (it then publishes nothing).
    func publishesAsReadOnlyMember() throws(CofferError) -> Bool {
        guard let key = try ownSignKey() else { return false }
        return try sharing.membership(validating: false).members.contains { $0.publicKey.signKey == key && $0.role == .readOnly }
    }

    /// This replica's identity's Ed25519 key, if it holds one.
    func ownSignKey() throws(CofferError) -> [UInt8]? { try sharing.identity()?.publicKey.signKey }

    /// The signer of this replica's next bundle and its publication
    /// counter, reserved (a write) before the bundle is written; nil when
    /// the vault has no members or this replica's identity is none of them
    /// (it then writes an unsigned bundle, which members refuse). Refuses
    /// (exit 77) to publish with a read-only identity.
    func publicationSigner(members: [VaultMember]) throws(CofferError) -> (MemberSecretKey, UInt64)? {
        guard !members.isEmpty, let identity = try sharing.identity() else { return nil }
        let key = identity.publicKey.signKey
        guard let me = members.first(where: { $0.publicKey.signKey == key }) else { return nil }
        guard me.role == .readWrite else {
            throw CofferError(
                .permissionDenied, "this identity is read-only in this vault (member '\(me.name)'): it publishes no bundle",
                hint: "every replica refuses a read-only member's writes; a read-write member can make this identity read-write (docs/sharing.md)")
        }
        let counter: UInt64 = try CofferError.wrap {
            try write { db, mac in
                let old = try Queries.publisher(db, signKey: key)
                let next = max((old?.counter ?? 0) + 1, UInt64(max(0, Clock.nowMillis())))
                try Queries.setPublisher(db, PublisherRecord(signKey: key, counter: next, summary: old?.summary ?? VersionVector()), mac: mac)
                return next
            }
        }
        return (identity.secretKey, counter)
    }
}
