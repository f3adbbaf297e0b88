import CofferStore

// The façade's git-credential operations: each is ``GitCredentials``'.
extension Vault {
    /// The field that lists the protocols an item serves to git, on
    /// purpose: `git-protocols=https,http` (commas or spaces).
    public static let gitProtocolsField = "git-protocols"

    /// Items named under this prefix are git credentials by convention
    /// (`git/HOST`, `git/HOST/PATH`, `git/USER@HOST`): `store` creates
    /// them and `erase` deletes them.
    public static let gitCredentialPrefix = "git/"

    /// The credential for a git `get`: the best matching item (a
    /// `git/…` item or a login whose url matches; docs/git-credential.md),
    /// or nil.
    public func gitCredential(for request: GitCredentialRequest) throws(CofferError) -> GitCredentialMatch? {
        try gitCredentials.gitCredential(for: request)
    }

    /// A git `store`: updates the password of the best matching item, or
    /// creates a login item `git/HOST[/PATH]` (or `git/USER@HOST[/PATH]`
    /// when that name is taken). A normal write: it syncs.
    public func storeGitCredential(_ r: GitCredentialRequest) throws(CofferError) -> GitCredentialStoreResult {
        try gitCredentials.storeGitCredential(r)
    }

    /// A git `erase`: deletes the `git/…` items that match the request
    /// exactly (protocol, host, path when given, username when given, and
    /// the password when given). Matching items elsewhere are the user's
    /// own and are left alone (listed in the result).
    public func eraseGitCredential(_ r: GitCredentialRequest) throws(CofferError) -> GitCredentialEraseResult {
        try gitCredentials.eraseGitCredential(r)
    }
}
