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

    /// Locks this vault object: waits for the writes in progress, then
    /// wipes its master key and every sub-key from guarded memory. Every
    /// later write throws ``CofferError/Kind/locked`` before touching the
    /// file, and reads throw it at their first decryption. Other `Vault`
    /// objects of the same file (another unlock, another process) are not
    /// affected. Idempotent. Prefer ``Coffer/lock()``, which also waits
    /// for reads in progress; never call it from inside a vault call.
    public func lock() {
        keys.lock()
    }

    /// Whether ``lock()`` (or ``Coffer/lock()``, or the end of the session
    /// a ``Coffer`` was opened with) has wiped this vault's keys.
    public var isLocked: Bool { keys.isLocked }
}
