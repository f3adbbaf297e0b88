import CofferCrypto

// The façade's SSH key operations: each is ``SSHKeys``'.
extension Vault {
    /// The key of the `ssh-key` item `name` (or `id:HEX`).
    public func sshKey(named name: String) throws(CofferError) -> SSHVaultKey {
        try sshKeys.key(named: name)
    }

    /// The keys of every `ssh-key` item whose name starts with `prefix`
    /// ("" for all), sorted by item name, and the names of the items whose
    /// key could not be read.
    public func sshAgentKeys(prefix: String = "") throws(CofferError) -> (keys: [SSHVaultKey], unreadable: [String]) {
        try sshKeys.agentKeys(prefix: prefix)
    }

    /// Stores `key` as a new `ssh-key` item called `name`. Fails with
    /// ``CofferError/Kind/duplicateName`` if a live item has the name.
    @discardableResult
    public func addSSHKey(_ key: SSHPrivateKey, name: String, confirm: Bool = false, tags: [String] = [], policy: SyncPolicy = .sync) throws(CofferError)
        -> Item
    {
        try sshKeys.add(key, name: name, confirm: confirm, tags: tags, policy: policy)
    }
}
