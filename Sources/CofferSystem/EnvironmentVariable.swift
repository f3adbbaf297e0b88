#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One environment variable, read with `getenv`.
///
/// `ProcessInfo.processInfo.environment` copies the whole environment into
/// a new dictionary on every call: about 1 M instructions and a first-use
/// conformance scan of the Swift runtime, three times on every `coffer get`
/// (the session token, the vault's path, the session folder) for three
/// variables (docs/benchmarks-cli.md, "Start-up").
public enum EnvironmentVariable {
    /// The variable's value, or nil when it is not set.
    public static func value(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        return String(cString: p)
    }
}
