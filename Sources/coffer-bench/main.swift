import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// `coffer-bench`: builds large vaults for the benchmark scripts
/// (scripts/bench-*.sh) and the bulk-load tests. Not installed, not part of
/// the product: it writes generated items straight through CofferKit's
/// package-internal write path, skipping the checks a user's write gets.
struct CofferBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coffer-bench",
        abstract: "Generate and change items in bulk, for benchmarks only.",
        subcommands: [Fill.self, Touch.self, Clone.self])
}

/// The vault and passphrase, read the way `coffer` reads them (without
/// sessions): --passphrase-file, else $COFFER_PASSPHRASE.
struct BenchVaultOptions: ParsableArguments {
    @Option(help: "Vault file (default: as coffer).")
    var vault: String?

    @Option(help: "Read the passphrase from this file.")
    var passphraseFile: String?

    func unlock() throws -> Vault {
        let file = try VaultFile.open(path: VaultLocation.resolve(explicit: vault))
        let passphrase: SecretBytes
        if let passphraseFile {
            passphrase = try SecretInput.read(path: passphraseFile)
        } else if let value = SecretInput.environment("COFFER_PASSPHRASE") {
            passphrase = value
        } else {
            throw ValidationError("set COFFER_PASSPHRASE or pass --passphrase-file")
        }
        return try file.unlock(passphrase: passphrase)
    }
}

func note(_ text: String) {
    FileHandle.standardError.write(Data("coffer-bench: \(text)\n".utf8))
}

CofferBench.main()
