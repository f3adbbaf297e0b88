import CofferKit

/// A vault with ``FastKDF`` settings in its own ``TemporaryDirectory``,
/// removed when this object goes away. Keep it alive while the vault is used:
///
///     let box = try TemporaryVault()
///     let v = box.vault
public final class TemporaryVault: @unchecked Sendable {
    /// Declared first: released before the folder is removed.
    public let vault: Vault
    public let directory: TemporaryDirectory

    /// A vault at `name` (a path inside the folder; missing folders on it
    /// are created) unlocked with `passphrase`.
    public init(passphrase: String = "pw", name: String = "v/vault.coffer", prefix: String = "coffer-kit") throws(CofferError) {
        let directory = TemporaryDirectory(prefix: prefix)
        self.directory = directory
        vault = try VaultFile.create(
            path: directory.path(name), passphrase: SecretBytes(copying: Array(passphrase.utf8)), kdf: FastKDF.parameters)
    }
}
