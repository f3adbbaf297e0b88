internal import CSodium

/// One-time libsodium initialisation. `sodium_init` is idempotent and
/// thread-safe; we call it from every entry point through this constant so
/// no caller has to remember it.
enum Sodium {
    static let ready: Bool = {
        sodium_init() >= 0
    }()

    static func ensure() {
        precondition(ready, "libsodium failed to initialise")
    }
}
