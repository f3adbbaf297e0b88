import CofferCrypto
import CofferSync

// The façade's sharing operations (docs/sharing.md): each is ``Sharing``'s.
extension Vault {
    /// This vault's member identity (its secret half is the local-only
    /// reserved item `.coffer/identity`), or nil when it holds none.
    public func memberIdentity() throws(CofferError) -> MemberIdentity? {
        try sharing.identity()
    }

    /// Makes a new member identity and keeps it in this vault. Fails with
    /// ``CofferError/Kind/duplicateName`` when the vault holds one.
    @discardableResult
    public func createMemberIdentity(name: String) throws(CofferError) -> MemberIdentity {
        try sharing.createIdentity(name: name)
    }
}

extension Vault {
    /// Which member wrote under each replica id (docs/sharing.md,
    /// "Signed writes"): the replicas bound to a current member, and this
    /// replica when its identity is one; empty for a vault without members.
    public func memberNamesByReplica() throws(CofferError) -> [ReplicaID: String] {
        try replication.memberNamesByReplica()
    }

    /// The vault's members (docs/sharing.md, "Members"), sorted by name,
    /// and the entries that could not be read.
    public func membership() throws(CofferError) -> Membership {
        try sharing.membership()
    }

    /// Adds a member, or changes the key or role of the member `name`
    /// (`replaced`). A change that syncs; fails with
    /// ``CofferError/Kind/duplicateName`` when another name holds the key.
    @discardableResult
    public func addMember(name: String, publicKey: MemberPublicKey, role: VaultMember.Role = .readWrite) throws(CofferError) -> (
        member: VaultMember, replaced: Bool
    ) {
        try sharing.addMember(name: name, publicKey: publicKey, role: role)
    }
}

/// What removing a member did.
public struct MemberRemoval: Sendable {
    /// The name removed.
    public var name: String
    /// The member removed; nil when its entry was not a usable member.
    public var member: VaultMember?
    /// The rotation of the master key that followed.
    public var rekey: RekeyReport
    /// The vault under its new key.
    public var vault: Vault
}

extension VaultFile {
    /// Removes the member `name` from `vault` (a change that syncs) and
    /// rotates the master key (a rekey with `passphrase`, which stays the
    /// vault's passphrase): the key of the new epoch is never sealed to the
    /// removed member. What the member already read, it keeps.
    public func removeMember(
        _ name: String, from vault: Vault, passphrase: SecretBytes, sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates()
    )
        throws(CofferError) -> MemberRemoval
    {
        guard vault.file === self else { throw CofferError(.internalError, "removeMember called with another file's vault") }
        let member = try vault.sharing.removeMemberEntry(name: name)
        let (rekeyed, report) = try rekey(vault, passphrase: passphrase, sessionDirectories: sessionDirectories)
        return MemberRemoval(name: name, member: member, rekey: report, vault: rekeyed)
    }
}

extension Vault {
    /// Lets the member identity `publicKey` unlock this file without the
    /// passphrase: the master key of the current key epoch sealed to it and
    /// kept in the file (vault format 8; `coffer clone --identity` does it
    /// for the identity that cloned). A rekey seals the new key to it too.
    public func allowUnlock(by publicKey: MemberPublicKey) throws(CofferError) {
        try sharing.allowUnlock(by: publicKey)
    }
}
