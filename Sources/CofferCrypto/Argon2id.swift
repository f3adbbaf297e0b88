internal import CArgon2

/// Argon2id cost parameters, stored in the vault and in bundle headers.
public struct KDFParameters: Sendable, Equatable, Hashable, Codable {
    /// Memory cost in KiB.
    public var memoryKiB: UInt32
    /// Number of passes over memory.
    public var iterations: UInt32
    /// Lanes (and threads).
    public var parallelism: UInt32

    public init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// 256 MiB, 3 passes, 4 lanes: about half a second on a 2-core machine.
    public static let `default` = KDFParameters(memoryKiB: 256 * 1024, iterations: 3, parallelism: 4)

    /// OWASP's floor for Argon2id (19 MiB, 2 passes). Below this we warn.
    public static let recommendedMinimumMemoryKiB: UInt32 = 19 * 1024
    public static let recommendedMinimumIterations: UInt32 = 2
    /// The most passes Coffer accepts (anywhere: init, passwd, a bundle).
    public static let maximumIterations: UInt32 = 32

    /// Whether these parameters are below the recommended floor.
    public var isWeak: Bool {
        memoryKiB < Self.recommendedMinimumMemoryKiB || iterations < Self.recommendedMinimumIterations
    }

    /// Checks the limits libargon2 itself enforces, so a bad value is
    /// reported before any work is done.
    public func validate() throws(CryptoError) {
        guard parallelism >= 1, parallelism <= 255 else {
            throw .kdfFailed("parallelism must be between 1 and 255")
        }
        guard iterations >= 1 else { throw .kdfFailed("iterations must be at least 1") }
        // Bounds also protect against a forged bundle header asking a
        // clone to run Argon2id for hours.
        guard iterations <= Self.maximumIterations else {
            throw .kdfFailed("iterations must be at most \(Self.maximumIterations)")
        }
        guard memoryKiB >= 8 * parallelism else {
            throw .kdfFailed("memory must be at least 8 KiB per lane (\(8 * parallelism) KiB)")
        }
        guard memoryKiB <= 4 * 1024 * 1024 else { throw .kdfFailed("memory must be at most 4 GiB") }
    }
}

/// Argon2id (RFC 9106) through libargon2.
public enum Argon2id {
    /// Length of the salt Coffer generates.
    public static let saltLength = 16

    /// Derives a 32-byte key from `passphrase` into guarded memory.
    public static func deriveKey(
        passphrase: SecretBytes, salt: [UInt8], parameters: KDFParameters, length: Int = 32
    ) throws(CryptoError) -> SecretBytes {
        try parameters.validate()
        guard salt.count >= 8 else { throw .malformedInput("salt must be at least 8 bytes") }
        var rc: Int32 = 0
        let key = SecretBytes(count: length) { out in
            passphrase.withBytes { pwd in
                salt.withUnsafeBytes { s in
                    rc = argon2id_hash_raw(
                        parameters.iterations, parameters.memoryKiB, parameters.parallelism,
                        pwd.baseAddress, pwd.count, s.baseAddress, s.count,
                        out.baseAddress, length)
                }
            }
        }
        guard rc == ARGON2_OK.rawValue else {
            throw .kdfFailed(String(cString: argon2_error_message(rc)))
        }
        return key
    }
}
