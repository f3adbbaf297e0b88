import Foundation

extension Coffer {
    /// Locks the vault for this program: waits for the calls already
    /// made to this `Coffer` (they finish normally), then wipes the master
    /// key and every key derived from it from guarded memory. From then
    /// on every call throws ``CofferError/Kind/locked``, and every
    /// ``changes`` sequence yields a change whose ``VaultChange/locked``
    /// is true and ends.
    ///
    /// What is locked is this `Coffer`'s unlocked vault (its ``vault``),
    /// so the `Coffer`s that share it (``scoped(toService:)``,
    /// ``init(vault:)`` of the same `Vault`) are locked with it. Other
    /// `Coffer`s of the same file, other processes and the shell session
    /// are not: to unlock again, open the vault again. Values the program
    /// already read (`String`s) are its own and are not wiped. Locking
    /// twice does nothing.
    public func lock() async {
        let vault = self.vault
        try? await BlockingWork.on(io) { () throws(CofferError) in _ = vault.keys.lock() }
    }

    /// Whether this `Coffer` is locked: by ``lock()``, or because the
    /// shell session it was opened with has ended. A session's end is
    /// noticed by the next call (which throws ``CofferError/Kind/locked``)
    /// or by the next look of a ``changes`` sequence; until then this says
    /// false.
    public var isLocked: Bool { vault.isLocked }

    /// The error a call makes once the session a `Coffer` was opened with
    /// has ended.
    static func sessionEnded(_ why: String) -> CofferError {
        CofferError(
            .locked, "\(why); this program's vault is locked and its keys are wiped from memory",
            hint: "unlock the vault again (a new session), then open it again")
    }

    /// Locks `vault` when the session it was opened with has ended (its
    /// file removed by a lock, or expired). A call (`isUse`) restarts the
    /// session's idle timer, as a `coffer` command using it does; a look
    /// of the change stream does not. Called on a queue that does not hold
    /// the keys (locking waits for their users).
    static func lockIfSessionEnded(_ vault: Vault, _ session: SessionLease?, isUse: Bool) {
        guard let session, !vault.isLocked, let why = session.end(refresh: isUse) else { return }
        vault.keys.lock(because: sessionEnded(why))
    }
}
