import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem

/// The options of a command that may set a new passphrase and new KDF
/// parameters for the master key's wrapping: `passwd` and `rekey`.
struct NewPassphraseOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Read the new passphrase from this open file descriptor.", valueName: "n"))
    var newPassphraseFd: Int32?

    @Option(help: ArgumentHelp("Read the new passphrase from this file.", valueName: "file"))
    var newPassphraseFile: String?

    @Option(help: ArgumentHelp("New Argon2id memory, e.g. 256M, 1G (no unit: MiB).", valueName: "size"))
    var kdfMemory: String?

    @Option(help: ArgumentHelp("New Argon2id passes over memory.", valueName: "n"))
    var kdfIterations: UInt32?

    @Option(help: ArgumentHelp("New Argon2id lanes.", valueName: "n"))
    var kdfParallelism: UInt32?

    @Flag(help: "Accept a new passphrase below the minimum strength (`coffer help guide`).")
    var force = false

    /// A new passphrase is given by file descriptor or file.
    var givesNewPassphrase: Bool { newPassphraseFd != nil || newPassphraseFile != nil }

    /// The new KDF parameters, nil when no --kdf-* option is given; then
    /// refuses the current and the new passphrase from one descriptor.
    /// Both checks come before any passphrase is read.
    func kdfAndCheck(base: KDFParameters, current: VaultOptions) throws(CofferError) -> KDFParameters? {
        var kdf: KDFParameters?
        if kdfMemory != nil || kdfIterations != nil || kdfParallelism != nil {
            kdf = try KDFOptions.parameters(memory: kdfMemory, iterations: kdfIterations, parallelism: kdfParallelism, base: base)
        }
        if let a = current.passphraseFd, let b = newPassphraseFd, a == b {
            throw CofferError(.usage, "the current and the new passphrase cannot come from the same file descriptor \(a)")
        }
        return kdf
    }

    /// Reads the new passphrase (asked twice on a terminal) and checks its
    /// strength (`--force` accepts a weak one).
    func newPassphrase() throws(CofferError) -> SecretBytes {
        if !givesNewPassphrase, !SecretInput.hasTerminal {
            throw CofferError(
                .usage, "a new passphrase is needed and there is no terminal to ask on", hint: "use --new-passphrase-fd N or --new-passphrase-file F")
        }
        let new = try PassphraseSource.read(
            fd: newPassphraseFd, file: newPassphraseFile, environment: nil, prompt: "New passphrase: ", confirm: true)
        try PassphrasePolicy.check(new, force: force)
        return new
    }
}
