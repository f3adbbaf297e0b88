import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// A member of a shared vault (docs/sharing.md, "Members").
public struct VaultMember: Sendable, Equatable {
    /// What a member may do.
    public enum Role: String, Sendable, CaseIterable {
        /// Reads and writes.
        case readWrite = "read-write"
        /// Reads only (a CI job): its writes are refused by every replica.
        case readOnly = "read-only"
    }

    /// The name it was added under.
    public var name: String
    /// Its public identity.
    public var publicKey: MemberPublicKey
    public var role: Role
    /// Concurrent additions under this name gave different values; the
    /// one shown on every replica is this one until the name is added again.
    public var hasConflict: Bool
    /// When the entry was last written.
    public var updatedAt: Date
}

/// A membership entry that cannot be used.
public struct UnreadableMember: Sendable, Equatable {
    public var name: String
    public var problem: String
}

/// The vault's membership: its members and the entries that could not be read.
public struct Membership: Sendable, Equatable {
    public var members: [VaultMember]
    public var unreadable: [UnreadableMember]

    /// The member with this X25519 or Ed25519 key.
    public func member(withKey key: MemberPublicKey) -> VaultMember? { members.first { $0.publicKey == key } }
}

extension Sharing {
    /// The reserved item holding the membership: a `custom` item that
    /// syncs like any other, one field per member, named after the member,
    /// whose value is `coffer1… ROLE` (docs/sharing.md, "Members").
    static let membersItemName = ".coffer/members"

    /// The membership registry item, or nil; several (two replicas made it
    /// before syncing) are united, the oldest winning a name, and with
    /// `heal` the others' fields are moved into the oldest and the others
    /// deleted.
    func membersRegistry(heal: Bool) throws(CofferError) -> Item? { try items.registry(named: Sharing.membersItemName, heal: heal) }

    static func entryValue(_ key: MemberPublicKey, role: VaultMember.Role) -> String { key.text + " " + role.rawValue }

    /// `validating`: check that the keys are usable points (two scalar
    /// multiplications); an export skips it (sealing refuses a weak key).
    static func parseEntry(_ value: String, validating: Bool = true) -> (MemberPublicKey, VaultMember.Role)? {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let role = VaultMember.Role(rawValue: String(parts[1])) else { return nil }
        let text = String(parts[0])
        guard let key = validating ? try? MemberPublicKey(text: text) : try? MemberPublicKey(uncheckedText: text) else { return nil }
        return (key, role)
    }

    /// The vault's members, sorted by name. A name whose entry holds a
    /// removal concurrent with an addition counts as removed (a removal
    /// wins); concurrent additions with different values count with the
    /// value shown on every replica, flagged as a conflict.
    package func membership(validating: Bool = true) throws(CofferError) -> Membership {
        guard let registry = try membersRegistry(heal: false) else { return Membership(members: [], unreadable: []) }
        var out = Membership(members: [], unreadable: [])
        for f in registry.fields.sorted(by: { $0.name < $1.name }) {
            let conflict = registry.conflicts.first { $0.field == f.name }
            if let conflict, conflict.sides.contains(where: { $0.value == nil }) { continue }
            guard let (key, role) = Sharing.parseEntry(f.value, validating: validating) else {
                out.unreadable.append(UnreadableMember(name: f.name, problem: "its entry is not a public identity and a role"))
                continue
            }
            out.members.append(VaultMember(name: f.name, publicKey: key, role: role, hasConflict: conflict != nil, updatedAt: registry.updatedAt))
        }
        return out
    }

    /// Adds a member (or changes a member's key or role): one write that
    /// syncs like any other. Refuses a key that another name holds.
    package func addMember(name: String, publicKey: MemberPublicKey, role: VaultMember.Role) throws(CofferError) -> (member: VaultMember, replaced: Bool) {
        try MemberIdentity.checkName(name)
        let current = try membership()
        if let other = current.members.first(where: { $0.publicKey == publicKey && $0.name != name }) {
            throw CofferError(
                .duplicateName, "that public identity is already the member '\(other.name)'",
                remedy: .init(.chooseAnotherMember, "one identity is one member; remove the other name first, or give another identity"))
        }
        let replaced = current.members.contains { $0.name == name }
        if !replaced && current.members.count >= BundleFormat.maxSealedKeys {
            throw CofferError(.usage, "a vault has at most \(BundleFormat.maxSealedKeys) members", hint: "remove a member first")
        }
        let field = Field(name: name, value: Sharing.entryValue(publicKey, role: role), isSecret: false)
        if let registry = try membersRegistry(heal: true) {
            var e = ItemEdit()
            e.setFields = [field]
            _ = try items.edit("id:" + registry.id.hex, e)
        } else {
            _ = try items.add([ItemDraft(name: Sharing.membersItemName, type: .custom, fields: [field])], allowReserved: true)
        }
        let member = VaultMember(name: name, publicKey: publicKey, role: role, hasConflict: false, updatedAt: Date())
        return (member, replaced)
    }

    /// Removes a member's entry (a tombstone that syncs). The caller
    /// rotates the key next (``VaultFile/removeMember(_:name:passphrase:)``).
    package func removeMemberEntry(name: String) throws(CofferError) -> VaultMember? {
        guard let registry = try membersRegistry(heal: true), registry.field(name) != nil else {
            throw CofferError(.itemNotFound, "no member named '\(name)'", remedy: .init(.listMembers, "list the members"))
        }
        let removed = try membership().members.first { $0.name == name }
        var e = ItemEdit()
        e.unsetFields = [name]
        _ = try items.edit("id:" + registry.id.hex, e)
        return removed
    }
}

extension CofferError.Remedy.Action {
    /// List the vault's members.
    public static let listMembers = Self(rawValue: "listMembers")
    /// The identity is another member's.
    public static let chooseAnotherMember = Self(rawValue: "chooseAnotherMember")
}
