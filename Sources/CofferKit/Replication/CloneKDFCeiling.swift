import CofferCrypto

extension Replication {
    package static func checkCloneKDF(_ kdf: KDFParameters, path: String) throws(CofferError) {
        let c = Vault.cloneKDFCeiling
        var over: [String] = []
        if kdf.memoryKiB > c.memoryKiB { over.append("memory \(describeKiB(kdf.memoryKiB)) (ceiling \(describeKiB(c.memoryKiB)))") }
        if kdf.iterations > c.iterations { over.append("passes \(kdf.iterations) (ceiling \(c.iterations))") }
        if kdf.parallelism > c.parallelism { over.append("lanes \(kdf.parallelism) (ceiling \(c.parallelism))") }
        guard !over.isEmpty else { return }
        throw CofferError(
            .badData, "\(path) asks for Argon2id \(over.joined(separator: ", ")), above this machine's ceiling for a clone",
            remedy: .init(
                .allowExpensiveKDF, "if you made the vault with these parameters, clone it allowing Argon2id parameters above the ceiling", path: path))
    }

    static func describeKiB(_ k: UInt32) -> String {
        if k % (1024 * 1024) == 0 { return "\(k / (1024 * 1024)) GiB" }
        if k % 1024 == 0 { return "\(k / 1024) MiB" }
        return "\(k) KiB"
    }
}
