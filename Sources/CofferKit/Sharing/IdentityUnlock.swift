import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// Unlocking a replica with a member identity (vault format 8,
// docs/key-hierarchy.md "Unlocking with a member identity",
// docs/sharing.md "Member replicas"): the file keeps its master key of the
// current key epoch sealed to each identity allowed to unlock it.

extension Sharing {
    /// Seals this vault's master key of its current key epoch to
    /// `publicKey` and keeps it in the file (a row covered by the vault
    /// MAC), so that the identity's secret half unlocks the file without
    /// the passphrase. Replaces the identity's earlier row.
    package func allowUnlock(by publicKey: MemberPublicKey) throws(CofferError) {
        let row = try Sharing.sealedRow(keys.master, to: publicKey, vault: vaultID, epoch: file.keyEpoch)
        try CofferError.wrap {
            try write { db, mac in
                try core.checkKeyEpoch(db)
                try Queries.setIdentityUnlock(db, row, mac: mac)
            }
        }
    }

    /// The identities allowed to unlock this file.
    package func unlockIdentities() throws(CofferError) -> [MemberPublicKey] {
        let rows = try CofferError.wrap { try store.read { db in try Queries.identityUnlocks(db) } }
        return rows.compactMap { try? MemberPublicKey(payload: $0.identity) }
    }

    /// `master` sealed to `publicKey`, bound to the vault and key epoch as
    /// a bundle's sealed keys are ("coffer-seal-v1" || vault id || epoch).
    static func sealedRow(_ master: SecretBytes, to publicKey: MemberPublicKey, vault: VaultID, epoch: KeyEpoch) throws(CofferError)
        -> IdentityUnlockRow
    {
        do {
            let box = try publicKey.seal(master, prefix: KeyHierarchy.sealPrefix(vault: vault, epoch: epoch))
            return IdentityUnlockRow(identity: publicKey.payload, sealedKey: box)
        } catch {
            throw CofferError(.badData, "cannot seal the vault key to \(publicKey.text.prefix(24))…: \(error)")
        }
    }

    /// The rows of `rows` sealed again to the same identities under a new
    /// master key and key epoch (a rekey, or a newer epoch adopted). A row
    /// whose identity cannot be read is dropped (the caller checked the
    /// vault MAC first, so coffer wrote it).
    static func resealed(_ rows: [IdentityUnlockRow], master: SecretBytes, vault: VaultID, epoch: KeyEpoch) -> [IdentityUnlockRow] {
        rows.compactMap { row in
            guard let key = try? MemberPublicKey(payload: row.identity) else { return nil }
            return try? sealedRow(master, to: key, vault: vault, epoch: epoch)
        }
    }
}

extension VaultFile {
    /// Unlocks with a member identity (`--identity FILE`): opens the
    /// master key sealed to it in this file. Refuses (exit 77) a file that
    /// keeps no key for this identity; a sealed key that does not open,
    /// names another vault or key epoch, or gives a key that the file's
    /// key check or vault MAC refuses (a row added or changed outside
    /// coffer) is exit 65, and nothing is read under it. The vault MAC is
    /// checked over every row before the vault is handed out.
    public func unlock(identity: MemberIdentity) throws(CofferError) -> Vault {
        let rows = try CofferError.wrap { try store.read { db in try Queries.identityUnlocks(db) } }
        let mine = identity.publicKey.payload
        guard let row = rows.first(where: { $0.identity == mine }) else {
            throw CofferError(
                .wrongPassphrase,
                rows.isEmpty
                    ? "\(path) does not open with a member identity (it was not cloned with one)"
                    : "\(path) does not open with the identity '\(identity.name)' (\(identity.publicKey.text.prefix(16))…)",
                remedy: .init(.unlockWithClonedIdentity, "unlock it with its passphrase, or give the identity file this replica was cloned with", path: path))
        }
        let tampered = CofferError(
            .badData, "vault file was modified outside coffer: the master key sealed to this identity in \(path) does not open or does not fit the file",
            remedy: VaultFile.restore)
        guard let (prefix, master) = try? identity.secretKey.openSealed(row.sealedKey, prefixLength: KeyHierarchy.sealPrefixLength),
            prefix == KeyHierarchy.sealPrefix(vault: header.vaultID, epoch: keyEpoch), master.count == 32
        else { throw tampered }
        if let keyCheck, !VaultCore.constantTimeEqual(KeyHierarchy.keyCheck(master: master, vault: header.vaultID, epoch: keyEpoch), keyCheck) {
            throw tampered
        }
        let vault = try CofferError.wrap { try Vault(file: self, master: master) }
        try CofferError.wrap { try store.read { db in try vault.core.checkVaultMAC(db) } }
        // This replica signs what it publishes with the identity it was
        // opened with (docs/sharing.md, "Signed writes").
        vault.core.unlockedIdentity.set(identity)
        return vault
    }

    /// The identities allowed to unlock this file (format 8), without
    /// unlocking it.
    public func unlockIdentities() throws(CofferError) -> [MemberPublicKey] {
        let rows = try CofferError.wrap { try store.read { db in try Queries.identityUnlocks(db) } }
        return rows.compactMap { try? MemberPublicKey(payload: $0.identity) }
    }
}
