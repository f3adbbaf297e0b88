import CofferCrypto
import CofferStore
import CofferSync
import Foundation

extension VaultFile {
    /// Changes the passphrase (and optionally the KDF parameters): checks
    /// `current`, wraps the same master key under `new` with a fresh salt,
    /// and replaces the header's wrapping in one transaction. Items are not
    /// re-encrypted, so shell sessions keep working. An interruption leaves
    /// either the old or the new passphrase working, never neither.
    ///
    /// `beforeCommit` runs after both key derivations and before the write
    /// (tests use it to interrupt the change at its most delicate point).
    @discardableResult
    public func changePassphrase(
        current: SecretBytes, new: SecretBytes, kdf newKDF: KDFParameters? = nil, beforeCommit: () -> Void = {}
    ) throws(CofferError) -> VaultHeader {
        let vault = try unlock(passphrase: current)
        return try rewrapMasterKey(of: vault, new: new, kdf: newKDF, beforeCommit: beforeCommit)
    }

    /// The second half of ``changePassphrase(current:new:kdf:beforeCommit:)``
    /// for a vault already unlocked with its passphrase (a program that
    /// wants to check the current passphrase before asking for the new one).
    /// Callers must have unlocked `vault` with the passphrase, not a session.
    @discardableResult
    public func rewrapMasterKey(
        of vault: Vault, new: SecretBytes, kdf newKDF: KDFParameters? = nil, beforeCommit: () -> Void = {}
    ) throws(CofferError) -> VaultHeader {
        guard vault.file === self else { throw CofferError(.internalError, "rewrapMasterKey called with another file's vault") }
        let kdf = newKDF ?? self.kdf
        do { try kdf.validate() } catch { throw CofferError(.usage, "invalid KDF parameters: \(error)") }
        guard new.count > 0 else {
            throw CofferError(.usage, "the new passphrase is empty", hint: "choose a passphrase of several words")
        }
        guard new.nfcNormalizedUTF8() != nil else {
            throw CofferError(.usage, "the new passphrase is not valid UTF-8 text", hint: "type it in a UTF-8 terminal, or save the passphrase file as UTF-8")
        }
        let wrapped: (salt: [UInt8], wrapped: [UInt8])
        do {
            // Bound to the key epoch from the first rekey on (wrap AD v2).
            wrapped = try KeyHierarchy.wrapMasterKey(vault.masterKey, passphrase: new, vault: header.vaultID, kdf: kdf, epoch: keyEpoch)
        } catch {
            throw CofferError(.usage, "cannot derive a key with these KDF parameters: \(error)")
        }
        var updated = header
        updated.kdfMemoryKiB = kdf.memoryKiB
        updated.kdfIterations = kdf.iterations
        updated.kdfParallelism = kdf.parallelism
        updated.kdfSalt = wrapped.salt
        updated.wrappedMasterKey = wrapped.wrapped
        // The new wrapping is bound (`coffer-wrap-v3`): vault format 7.
        updated.formatVersion = max(updated.formatVersion, VaultStore.boundWrapFormat)
        beforeCommit()
        let expected = header
        try CofferError.wrap {
            try vault.write { db, mac in
                // Another passwd may have run since this one read the header.
                let now = try Queries.header(db)
                guard now.wrappedMasterKey == expected.wrappedMasterKey, now.kdfSalt == expected.kdfSalt else {
                    throw CofferError(
                        .busy, "the passphrase of \(path) was changed by another process meanwhile", hint: "run the command again with the newest passphrase")
                }
                try Queries.updateHeaderWrapping(db, header: updated, mac: mac)
                // Stamp the new wrapping so it travels to the other
                // replicas through bundles (docs/sync.md §Passphrase changes).
                let local = try Queries.localReplica(db)
                let version = try Queries.keyWrapping(db).next(by: local.id, at: Int64(Date().timeIntervalSince1970 * 1000))
                try Queries.setKeyWrapping(db, version, mac: mac)
            }
        }
        return updated
    }
}
