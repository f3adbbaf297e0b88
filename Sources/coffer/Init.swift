import ArgumentParser
import CofferCrypto
import CofferKit

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a new vault.",
        discussion: """
            Asks for a new passphrase twice on the terminal (or reads it from --passphrase-fd, \
            --passphrase-file or COFFER_PASSPHRASE). The vault file is created with mode 0600 in a \
            folder with mode 0700. Argon2id defaults: 256 MiB, 3 iterations, 4 lanes.
            """)

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("Argon2id memory, e.g. 256M, 1G, 65536K (no unit: MiB).", valueName: "size"))
    var kdfMemory: String?

    @Option(help: ArgumentHelp("Argon2id passes over memory.", valueName: "n"))
    var kdfIterations: UInt32?

    @Option(help: ArgumentHelp("Argon2id lanes.", valueName: "n"))
    var kdfParallelism: UInt32?

    @Flag(help: "Accept a passphrase below the minimum strength (`coffer help guide`).")
    var force = false

    func run() throws {
        let kdf = try KDFOptions.parameters(memory: kdfMemory, iterations: kdfIterations, parallelism: kdfParallelism, base: .default)
        let path = options.path
        // Before asking anything: an existing vault is never replaced.
        // What a killed init left beside the path (docs/reliability.md).
        VaultFile.sweepStaleTemporaries(forVaultAt: path)
        if VaultLocation.exists(path) {
            throw CofferError(.vaultExists, "a vault already exists at \(path)", hint: "use it as it is, or choose another path with --vault PATH")
        }
        let passphrase = try options.passphrase(prompt: "New passphrase: ", confirm: true)
        try PassphrasePolicy.check(passphrase, force: force)
        let vault = try VaultFile.create(path: path, passphrase: passphrase, kdf: kdf)
        let info = try vault.file.info()
        Output.note("created vault \(path)")
        Output.note("vault id \(info.vaultID.hex), replica id \(info.replicaID.hex)")
    }
}

enum KDFOptions {
    /// Parses `256M`, `1G`, `65536K`, `19MiB`; a bare number is MiB.
    static func parseSize(_ text: String) -> UInt32? {
        let t = text.trimmingCharacters(in: .whitespaces).uppercased()
        var digits = t
        var multiplier: UInt64 = 1024
        for (suffix, m) in [("KIB", 1), ("MIB", 1024), ("GIB", 1024 * 1024), ("K", 1), ("M", 1024), ("G", 1024 * 1024)] as [(String, UInt64)] {
            if t.hasSuffix(suffix) {
                digits = String(t.dropLast(suffix.count))
                multiplier = m
                break
            }
        }
        guard let n = UInt64(digits), n > 0 else { return nil }
        let (kib, overflow) = n.multipliedReportingOverflow(by: multiplier)
        guard !overflow, kib <= UInt64(UInt32.max) else { return nil }
        return UInt32(kib)
    }

    static func parameters(memory: String?, iterations: UInt32?, parallelism: UInt32?, base: KDFParameters) throws(CofferError) -> KDFParameters {
        var kdf = base
        if let memory {
            guard let kib = parseSize(memory) else {
                throw CofferError(.usage, "invalid --kdf-memory '\(memory)'", hint: "give a size such as 256M or 1G")
            }
            kdf.memoryKiB = kib
        }
        if let iterations { kdf.iterations = iterations }
        if let parallelism { kdf.parallelism = parallelism }
        do { try kdf.validate() } catch {
            throw CofferError(.usage, "invalid KDF parameters: \(error)")
        }
        if kdf.memoryKiB < KDFParameters.recommendedMinimumMemoryKiB {
            Output.warn("--kdf-memory below 19 MiB makes the passphrase much easier to guess from a stolen vault")
        }
        if kdf.iterations < KDFParameters.recommendedMinimumIterations {
            Output.warn("--kdf-iterations below 2 makes the passphrase easier to guess from a stolen vault")
        }
        return kdf
    }
}
