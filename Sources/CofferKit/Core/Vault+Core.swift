import CofferStore
import CofferSync

// The façade's operations on the core itself: each is ``VaultCore``'s.
extension Vault {
    /// Checks everything `coffer verify` checks: the vault MAC; for every
    /// item its record (present, authentic, matching the item's clear
    /// columns, name hash and current versions); every current and history
    /// version's authentication under the item key. Reads the whole vault;
    /// changes nothing.
    public func verify() throws(CofferError) -> VerifyReport {
        try core.verify()
    }
}
