internal import CSodium

/// One-time libsodium initialisation. `sodium_init` is idempotent and
/// thread-safe; we call it from every entry point through this constant so
/// no caller has to remember it.
package enum Sodium {
    package static let ready: Bool = {
        sodium_init() >= 0
    }()

    package static func ensure() {
        precondition(ready, "libsodium failed to initialise")
    }

    /// Overwrites `count` bytes at `pointer` with zeros in a way the
    /// compiler cannot remove (`sodium_memzero`).
    package static func memzero(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        sodium_memzero(pointer, count)
    }
}
