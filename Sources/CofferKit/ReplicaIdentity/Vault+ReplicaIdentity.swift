import CofferStore
import CofferSync

// The façade's replica-identity operations: each is ``ReplicaIdentity``'s.
extension Vault {
    /// Checks that this file still owns its replica id (see
    /// ``rebindIfCopied(_:)``) and takes a new one if not. Commands that
    /// write call it first so they can say what happened.
    public func claimReplica() throws(CofferError) -> ReplicaRebinding? {
        try identity.claimReplica()
    }
}
