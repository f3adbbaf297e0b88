import CofferCrypto

extension Vault {
    /// The most a bundle's header may ask `clone` to spend on Argon2id
    /// before anything in the bundle is authenticated
    /// (docs/bundle-format.md, "Security considerations"): 1 GiB of memory, 10 passes, 8 lanes, four times the
    /// memory and three times the passes of ``KDFParameters/default``.
    /// `coffer clone --allow-expensive-kdf` lifts it (up to the hard
    /// limits of ``KDFParameters/validate()``: 4 GiB, 32 passes).
    public static let cloneKDFCeiling = KDFParameters(memoryKiB: 1024 * 1024, iterations: 10, parallelism: 8)

    /// Refuses a bundle whose Argon2id parameters exceed
    /// ``cloneKDFCeiling``, naming each parameter that does.
    public static func checkCloneKDF(_ kdf: KDFParameters, path: String) throws(CofferError) {
        let c = cloneKDFCeiling
        var over: [String] = []
        if kdf.memoryKiB > c.memoryKiB { over.append("memory \(describeKiB(kdf.memoryKiB)) (ceiling \(describeKiB(c.memoryKiB)))") }
        if kdf.iterations > c.iterations { over.append("passes \(kdf.iterations) (ceiling \(c.iterations))") }
        if kdf.parallelism > c.parallelism { over.append("lanes \(kdf.parallelism) (ceiling \(c.parallelism))") }
        guard !over.isEmpty else { return }
        throw CofferError(
            .badData, "\(path) asks for Argon2id \(over.joined(separator: ", ")), above this machine's ceiling for a clone",
            remedy: .init(.allowExpensiveKDF, "if you made the vault with these parameters, clone it allowing Argon2id parameters above the ceiling", path: path))
    }

    static func describeKiB(_ k: UInt32) -> String {
        if k % (1024 * 1024) == 0 { return "\(k / (1024 * 1024)) GiB" }
        if k % 1024 == 0 { return "\(k / 1024) MiB" }
        return "\(k) KiB"
    }
}
