import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
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

    @OptionGroup var newKey: NewPassphraseOptions

    func run() throws {
        let file = try options.openFile()
        let kdf = try newKey.kdfAndCheck(base: file.kdf, current: options)
        // Check the current passphrase before asking for a new one.
        let current = try options.passphrase(prompt: "Current passphrase: ")
        let vault = try file.unlock(passphrase: current)
        let new = try newKey.newPassphrase()
        if new.constantTimeEquals(current) && kdf == nil {
            throw CofferError(.usage, "the new passphrase is the same as the current one; nothing was changed")
        }
        try file.rewrapMasterKey(of: vault, new: new, kdf: kdf, beforeCommit: TestHooks.pauseBeforeCommit)
        Output.note("passphrase changed for \(file.path); running sessions keep working until they end")
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
