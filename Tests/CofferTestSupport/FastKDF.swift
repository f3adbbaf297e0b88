import CofferKit

/// The one set of small Argon2id settings the tests use, for speed (a real
/// vault's are far larger; the CLI warns about these).
public enum FastKDF {
    public static let parameters = KDFParameters(memoryKiB: 8 * 1024, iterations: 1, parallelism: 1)

    /// The same settings as `coffer init` options.
    public static let arguments = [
        "--kdf-memory", "\(parameters.memoryKiB / 1024)M",
        "--kdf-iterations", "\(parameters.iterations)",
        "--kdf-parallelism", "\(parameters.parallelism)",
    ]
}
