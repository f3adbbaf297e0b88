import ArgumentParser
import CofferCrypto
import CofferSystem
import CofferKit
import Foundation

struct Passwd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the vault passphrase (and optionally the Argon2id parameters).",
        discussion: """
            The current passphrase comes from --passphrase-fd, --passphrase-file, $COFFER_PASSPHRASE \
            or the terminal (a session is not enough). The new one from --new-passphrase-fd, \
            --new-passphrase-file, or the terminal (asked twice). Only the master key is re-wrapped, in \
            one transaction: items are not re-encrypted, running sessions keep working, and an \
            interruption leaves either the old or the new passphrase working. KDF parameters not \
            given stay as they are.
            """)

    @OptionGroup var options: VaultOptions

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

    @Flag(help: "Accept a new passphrase below the minimum strength (docs/user-guide.md).")
    var force = false

    func run() throws {
        let file = try options.openFile()
        var kdf: KDFParameters?
        if kdfMemory != nil || kdfIterations != nil || kdfParallelism != nil {
            kdf = try KDFOptions.parameters(memory: kdfMemory, iterations: kdfIterations, parallelism: kdfParallelism, base: file.kdf)
        }
        if let a = options.passphraseFd, let b = newPassphraseFd, a == b {
            throw CofferError(.usage, "the current and the new passphrase cannot come from the same file descriptor \(a)")
        }
        // Check the current passphrase before asking for a new one.
        let current = try options.passphrase(prompt: "Current passphrase: ")
        let vault = try file.unlock(passphrase: current)
        let new = try newPassphrase()
        try PassphrasePolicy.check(new, force: force)
        if new.constantTimeEquals(current) && kdf == nil {
            throw CofferError(.usage, "the new passphrase is the same as the current one; nothing was changed")
        }
        try file.rewrapMasterKey(of: vault, new: new, kdf: kdf, beforeCommit: TestHooks.pauseBeforeCommit)
        Output.note("passphrase changed for \(file.path); running sessions keep working until they end")
    }

    func newPassphrase() throws(CofferError) -> SecretBytes {
        if newPassphraseFd == nil, newPassphraseFile == nil, !SecretInput.hasTerminal {
            throw CofferError(.usage, "a new passphrase is needed and there is no terminal to ask on", hint: "use --new-passphrase-fd N or --new-passphrase-file F")
        }
        return try PassphraseSource.read(
            fd: newPassphraseFd, file: newPassphraseFile, environment: nil, prompt: "New passphrase: ", confirm: true)
    }
}

/// Hooks for black-box tests of interruption. Inert unless the variable is
/// set; they only ever delay, never change what is written.
enum TestHooks {
    /// $COFFER_TEST_PAUSE_BEFORE_COMMIT_MS: sleep that long between the key
    /// derivation and the commit of `coffer passwd`.
    static func pauseBeforeCommit() {
        guard let v = ProcessInfo.processInfo.environment["COFFER_TEST_PAUSE_BEFORE_COMMIT_MS"], let ms = UInt32(v), ms > 0 else { return }
        Output.err("coffer: test hook: pausing \(ms) ms before commit")
        usleep(min(ms, 60_000) * 1000)
    }
}
