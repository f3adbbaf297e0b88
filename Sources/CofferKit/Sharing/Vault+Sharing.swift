import CofferCrypto

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
