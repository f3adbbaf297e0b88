import CofferSystem
import Foundation

extension CofferError {
    /// Reads a passphrase with `body`, turning ``SecretInputError`` into
    /// the error the CLI reports for it.
    static func reading(_ body: () throws(SecretInputError) -> SecretBytes) throws(CofferError) -> SecretBytes {
        do { return try body() } catch { throw CofferError(error) }
    }

    /// The error for a passphrase that could not be read.
    init(_ e: SecretInputError) {
        switch e {
        case .unreadableDescriptor(let fd, let why):
            self.init(
                .usage, "cannot read the passphrase from file descriptor \(fd): \(why)", hint: "open the descriptor before starting the program, e.g. `3<file`")
        case .unreadableFile(let path, let why):
            self.init(.fileNotFound, "cannot read the passphrase file \(path): \(why)", hint: "check the passphrase file path")
        case .noTerminal:
            self.init(
                .locked, "a passphrase is needed and there is no terminal to ask on",
                remedy: .init(.givePassphrase, "unlock a shell session, or give the passphrase through a file descriptor, a file or COFFER_PASSPHRASE"))
        case .tooLong:
            self.init(.usage, "the passphrase is longer than 64 KiB")
        case .interrupted:
            self.init(.usage, "passphrase input ended before a newline")
        }
    }
}

/// Where CofferKit's blocking work runs, so that none of it holds a thread
/// of Swift's cooperative pool (which has one thread per core).
enum BlockingWork {
    /// Runs `body` on a new thread of its own: Argon2id (about a second
    /// and 256 MiB by default) and reading a passphrase (which waits for a
    /// person at a terminal) must not block the cooperative pool.
    static func onDedicatedThread<T: Sendable>(
        _ name: String, _ body: @escaping @Sendable () throws(CofferError) -> T
    ) async throws(CofferError) -> T {
        let result: Result<T, CofferError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(CofferError) -> T in try body() })
            }
            thread.name = name
            thread.start()
        }
        return try result.get()
    }

    /// Runs `body` on `queue` (a vault's serial I/O queue: its SQLite
    /// connection serves one call at a time anyway).
    static func on<T: Sendable>(
        _ queue: DispatchQueue, _ body: @escaping @Sendable () throws(CofferError) -> T
    ) async throws(CofferError) -> T {
        let result: Result<T, CofferError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(CofferError) -> T in try body() })
            }
        }
        return try result.get()
    }
}

/// A value behind a lock (Synchronization's `Mutex` needs macOS 15).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
