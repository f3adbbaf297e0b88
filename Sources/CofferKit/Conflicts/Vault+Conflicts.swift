import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's conflicts operations: each is ``ConflictResolution``'s.
extension Vault {
    /// Every open conflict: concurrent field values, deletes against
    /// concurrent edits, and names shared by several live items. Sorted by
    /// item name, then field. Secret values are included only when
    /// `revealSecrets` is set.
    public func conflicts(revealSecrets: Bool = false) throws(CofferError) -> [VaultConflict] {
        try conflictResolution.conflicts(revealSecrets: revealSecrets)
    }

    /// Settles a conflict of item `name` with one write that supersedes
    /// every side: its vector is the merge of all sides' vectors plus a new
    /// dot. `field` may be omitted when the item has exactly one conflict.
    /// For a delete conflict (`@deleted`), keeping a delete side deletes
    /// the item, keeping an edit side keeps it.
    @discardableResult
    public func resolve(_ name: String, field: String?, with resolution: Resolution) throws(CofferError) -> ResolveResult {
        try conflictResolution.resolve(name, field: field, with: resolution)
    }
}
