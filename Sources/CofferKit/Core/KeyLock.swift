import CofferCrypto
import Foundation

/// Whether a vault's keys may still be used, and how many users hold them
/// right now. ``VaultKeys/lock(because:)`` closes it: new users are
/// refused at once (with the reason), the users in progress are waited
/// for, then every key is wiped. So no write straddles the wipe: a write
/// holds the keys for its whole transaction (``VaultCore/write(_:)``) and
/// either commits under the real keys or never starts.
final class KeyLock: @unchecked Sendable {
    private let condition = NSCondition()
    private var users = 0
    private var reason: CofferError?

    /// Why the keys are locked; nil while they may be used.
    var lockedError: CofferError? {
        condition.lock()
        defer { condition.unlock() }
        return reason
    }

    /// Starts a use of the keys; throws the lock's reason once locked.
    func enter() throws(CofferError) {
        condition.lock()
        defer { condition.unlock() }
        if let reason { throw reason }
        users += 1
    }

    /// Ends a use started by ``enter()``.
    func leave() {
        condition.lock()
        users -= 1
        if users == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Refuses new users from now on, waits for the current ones, then
    /// runs `wipe`. Returns false (and wipes nothing) when already locked.
    /// Must not be called by a thread that holds the keys (it would wait
    /// for itself).
    func close(because why: CofferError, wipe: () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard reason == nil else { return false }
        reason = why
        while users > 0 { condition.wait() }
        wipe()
        return true
    }
}

extension VaultKeys {
    /// The reason given when a vault is locked without one.
    static let lockedByProgram = CofferError(
        .locked, "the vault was locked by this program; its keys are wiped from memory",
        hint: "open the vault again to use it")

    /// Whether ``lock(because:)`` has wiped the keys.
    package var isLocked: Bool { lockState.lockedError != nil }

    /// The error every use of the keys throws once they are wiped.
    package var lockedError: CofferError? { lockState.lockedError }

    /// Runs `body` holding the keys: ``lock(because:)`` waits until it
    /// returns. Throws the lock's error instead once the keys are wiped.
    package func use<T>(_ body: () throws(CofferError) -> T) throws(CofferError) -> T {
        try lockState.enter()
        defer { lockState.leave() }
        return try body()
    }

    /// ``use(_:)`` for bodies that throw any error.
    func useAny<T>(_ body: () throws -> T) throws -> T {
        try lockState.enter()
        defer { lockState.leave() }
        return try body()
    }

    /// Locks the vault for this process: refuses new uses of the keys
    /// (they throw `reason`, ``CofferError/Kind/locked``), waits for the
    /// uses in progress, then overwrites the master key and every sub-key
    /// in guarded memory with zeros. The memory itself is freed when the
    /// last object holding the keys goes. Idempotent: a later call keeps
    /// the first reason. Returns whether this call locked the vault.
    @discardableResult
    package func lock(because reason: CofferError = VaultKeys.lockedByProgram) -> Bool {
        lockState.close(because: reason) {
            for key in [master, item, nameIndex, fieldID, record, mac] { key.wipe() }
        }
    }
}
