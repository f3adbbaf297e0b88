import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's rekey operations: each is ``KeyRotation``'s.
extension Vault {
    /// This vault's key epoch.
    public var keyEpoch: KeyEpoch { file.keyEpoch }

    /// How a bundle header's key epoch compares with this vault's.
    public func keyEpochStatus(of header: BundleHeader) -> BundleKeyEpochStatus {
        keyRotation.keyEpochStatus(of: header)
    }

    /// Reads the clear header of the bundle at `path` and compares its key
    /// epoch with this vault's (nothing is authenticated yet).
    public func keyEpochStatus(ofBundleAt path: String) throws(CofferError) -> BundleKeyEpochStatus {
        try keyRotation.keyEpochStatus(ofBundleAt: path)
    }

    /// Adopts the newer master key of the bundle at `path` (another
    /// replica's `coffer rekey`): unwraps it from the bundle header with
    /// `passphrase` (the passphrase the rekeying replica set), checks that
    /// the bundle authenticates under it, then re-encrypts this vault's own
    /// state — its edits the rekeying replica has not seen included — under
    /// the new key in one transaction, exactly as `rekey` does, and takes
    /// the header's passphrase wrapping and key epoch. Returns the vault
    /// unlocked under the new key; import the bundle into that one.
    ///
    /// The bundle's Argon2id parameters are checked against the clone
    /// ceiling before they are used (they are not authenticated until the
    /// key is unwrapped), unless `allowExpensiveKDF`.
    ///
    /// Once adopted, every shell session of the vault in
    /// `sessionDirectories` is ended, as by a rekey.
    public func adoptKeyEpoch(
        ofBundleAt path: String, passphrase: SecretBytes, allowExpensiveKDF: Bool = false,
        sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates()
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        try keyRotation.adoptKeyEpoch(ofBundleAt: path, passphrase: passphrase, allowExpensiveKDF: allowExpensiveKDF, sessionDirectories: sessionDirectories)
    }

    /// Adopts the newer master key of the bundle at `path` through the box
    /// sealed to the member identity `identity` (docs/sharing.md, "Member
    /// replicas"): no passphrase and no Argon2id. Refused with exit 77 when
    /// the bundle seals nothing to it (the member was removed: nothing is
    /// changed), with exit 65 when its box names another vault or key
    /// epoch (rule `sealed-key-binding`) or the bundle does not
    /// authenticate under the key it gives. Otherwise as the passphrase
    /// adoption; every session of the vault is ended except the one this
    /// vault was unlocked through, which is carried over to the new key
    /// (``RekeyReport/sessionCarriedOver``).
    public func adoptKeyEpoch(
        ofBundleAt path: String, identity: MemberIdentity, sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates()
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        try keyRotation.adoptKeyEpoch(ofBundleAt: path, identity: identity, sessionDirectories: sessionDirectories)
    }

    /// The member identity this vault was unlocked with: an identity file
    /// (``VaultFile/unlock(identity:)``), or the identity kept in the shell
    /// session it was unlocked through (`coffer unlock --identity`); nil
    /// when it was unlocked with the passphrase or a session opened with
    /// it. Reading a session's identity can fail (exit 77, unlock again).
    public func unlockingIdentity() throws(CofferError) -> MemberIdentity? {
        try core.unlockedIdentity.load()
    }

    /// ``adoptKeyEpoch(ofBundleAt:passphrase:allowExpensiveKDF:)`` with
    /// passphrases from `passphrases`, asked with the bundle's epoch and
    /// the attempt number (0, 1, …) until one opens the new key or it
    /// returns nil (then the last wrong-passphrase error is thrown).
    public func adoptKeyEpoch(
        ofBundleAt path: String, passphrases: (KeyEpoch, Int) throws(CofferError) -> SecretBytes?
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        try keyRotation.adoptKeyEpoch(ofBundleAt: path, passphrases: passphrases)
    }
}
