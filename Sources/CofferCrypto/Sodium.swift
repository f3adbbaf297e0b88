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

    /// Checks the result of a libsodium call that fails only when misused:
    /// a length outside its documented range (checked by a precondition
    /// before each such call) or, for `crypto_generichash_final`, a state
    /// finalised twice. The calls it guards return nothing else but 0 in
    /// libsodium 1.0.18–1.0.20, so a failure is a bug in Coffer, and going
    /// on would hand back the untouched output buffer as a key or hash
    /// (the filler `sodium_malloc` writes, or zeros). Traps, naming the call.
    @inline(__always)
    static func mustSucceed(_ rc: Int32, _ call: @autoclosure () -> String) {
        precondition(rc == 0, "libsodium: \(call()) failed (\(rc)); this is a bug in Coffer")
    }

    /// Allocates guarded memory for internal state (a stream's, a hash's);
    /// out of memory for it stops the process, as for ``SecretBytes``.
    static func mallocOrTrap(_ count: Int) -> UnsafeMutableRawPointer {
        guard let p = sodium_malloc(count) else {
            fatalError("sodium_malloc failed: out of guarded memory")
        }
        return p
    }

    /// Overwrites `count` bytes at `pointer` with zeros in a way the
    /// compiler cannot remove (`sodium_memzero`).
    package static func memzero(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        sodium_memzero(pointer, count)
    }
}
