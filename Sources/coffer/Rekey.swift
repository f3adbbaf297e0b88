import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Rotate the vault's master key: re-encrypt everything under a new random key.",
        discussion: """
            Makes a new random master key and, in one transaction, re-encrypts every field version \
            (current and history) under it, re-derives every field id and name hash, re-seals every \
            item record and rebuilds the vault MAC; an interruption leaves the old or the new key, \
            never half. The vault's key epoch goes up by one. Every shell session of the vault ends \
            (a session holds the old key: `coffer get` with it exits 77; unlock again). From then on \
            bundles are written under the new key (bundle format 3); another replica adopts it on its \
            next `coffer sync` or `coffer import`, which asks once for the passphrase, and refuses \
            bundles of the old key. The passphrase comes from --passphrase-fd, --passphrase-file, \
            $COFFER_PASSPHRASE or the terminal (a session is not enough). It stays the same unless \
            --change-passphrase, --new-passphrase-fd or --new-passphrase-file gives a new one: after \
            a leaked passphrase, change it here, in the same step (docs/threat-model.md). Exit status: \
            0; 64 usage; 65 the vault file was modified outside coffer; 75 another process changed \
            the key meanwhile; 77 wrong passphrase. See docs/key-hierarchy.md and docs/user-guide.md.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Also set a new passphrase (asked twice on the terminal).")
    var changePassphrase = false

    @Option(help: ArgumentHelp("Read the new passphrase from this open file descriptor (implies --change-passphrase).", valueName: "n"))
    var newPassphraseFd: Int32?

    @Option(help: ArgumentHelp("Read the new passphrase from this file (implies --change-passphrase).", valueName: "file"))
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
        let current = try options.passphrase(prompt: "Passphrase: ")
        let vault = try file.unlock(passphrase: current)
        if let change = try vault.claimReplica() { Output.note(change.message) }
        var passphrase = current
        if changePassphrase || newPassphraseFd != nil || newPassphraseFile != nil {
            if newPassphraseFd == nil, newPassphraseFile == nil, !SecretInput.hasTerminal {
                throw CofferError(.usage, "a new passphrase is needed and there is no terminal to ask on", hint: "use --new-passphrase-fd N or --new-passphrase-file F")
            }
            let new = try PassphraseSource.read(
                fd: newPassphraseFd, file: newPassphraseFile, environment: nil, prompt: "New passphrase: ", confirm: true)
            try PassphrasePolicy.check(new, force: force)
            passphrase = new
        }
        let (rekeyed, report) = try file.rekey(vault, passphrase: passphrase, kdf: kdf, beforeCommit: TestHooks.pauseBeforeCommit)
        let ended = KeyAdoption.endSessions(of: rekeyed)
        Output.note(
            "rotated the master key of \(file.path) (key epoch \(report.previous.number) → \(report.epoch.number)): \(report.items) item\(report.items == 1 ? "" : "s"), \(report.versions) field version\(report.versions == 1 ? "" : "s") and \(report.historyVersions) history version\(report.historyVersions == 1 ? "" : "s") re-encrypted"
                + (passphrase === current ? "" : "; the passphrase changed"))
        Output.note("\(ended) session\(ended == 1 ? "" : "s") ended; other replicas adopt the new key on their next sync or import (the passphrase is asked once there)")
    }
}

/// Adopting another replica's new master key during `import` and `sync`
/// (docs/sync.md §Master-key rotation).
enum KeyAdoption {
    /// Passphrases to try, in order: the one this command was unlocked
    /// with, $COFFER_PASSPHRASE, then the terminal (up to three times).
    static func passphrases(for path: String) -> (KeyEpoch, Int) throws(CofferError) -> SecretBytes? {
        var sources: [SecretBytes] = []
        if let p = UnlockedVault.passphrase { sources.append(p) }
        if let e = SecretInput.environment("COFFER_PASSPHRASE"), !sources.contains(where: { $0.constantTimeEquals(e) }) { sources.append(e) }
        let fixed = sources
        return { (epoch: KeyEpoch, attempt: Int) throws(CofferError) -> SecretBytes? in
            if attempt < fixed.count { return fixed[attempt] }
            guard SecretInput.hasTerminal, attempt < fixed.count + 3 else { return nil }
            let who = epoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
            if attempt == 0 {
                Output.note("\((path as NSString).lastPathComponent) carries a new master key (rekeyed on \(who), key epoch \(epoch.number))")
            }
            return try PassphraseSource.read(fd: nil, file: nil, environment: nil, prompt: "Passphrase of the new key: ", confirm: false)
        }
    }

    /// Wipes every session file of the vault in every session folder.
    static func endSessions(of vault: Vault) -> Int {
        var ended = 0
        for dir in SessionDirectory.allCandidates() { ended += Session.endAll(vaultID: vault.vaultID, directory: dir) }
        return ended
    }

    /// The line said after adopting.
    static func message(_ report: RekeyReport, sessions: Int) -> String {
        let who = report.epoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
        let when = Date(timeIntervalSince1970: Double(report.epoch.rekeyedAt) / 1000).ISO8601Format()
        return "adopted the new master key made on \(who) at \(when) (key epoch \(report.previous.number) → \(report.epoch.number)): \(report.items) item\(report.items == 1 ? "" : "s") re-encrypted, \(sessions) session\(sessions == 1 ? "" : "s") ended"
    }
}
