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
            bundles are written under the new key (bundle format 4); another replica adopts it on its \
            next `coffer sync` or `coffer import`, which asks once for the passphrase, and refuses \
            bundles of the old key. The passphrase comes from --passphrase-fd, --passphrase-file, \
            $COFFER_PASSPHRASE or the terminal (a session is not enough). It stays the same unless \
            --change-passphrase, --new-passphrase-fd or --new-passphrase-file gives a new one: after \
            a leaked passphrase, change it here, in the same step (`coffer help threat-model`). Exit status: \
            0; 64 usage; 65 the vault file was modified outside coffer; 75 another process changed \
            the key meanwhile; 77 wrong passphrase. See docs/key-hierarchy.md and `coffer help guide`.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Also set a new passphrase (asked twice on the terminal; --new-passphrase-fd and --new-passphrase-file imply it).")
    var changePassphrase = false

    @OptionGroup var newKey: NewPassphraseOptions

    func run() throws {
        let file = try options.openFile()
        let kdf = try newKey.kdfAndCheck(base: file.kdf, current: options)
        let current = try options.passphrase(prompt: "Passphrase: ")
        let vault = try file.unlock(passphrase: current)
        if let change = try vault.claimReplica() { Output.note(change.message) }
        if let restamp = try vault.restampFutureWrites() { Output.note(restamp.message) }
        let passphrase = try changePassphrase || newKey.givesNewPassphrase ? newKey.newPassphrase() : current
        let (_, report) = try file.rekey(vault, passphrase: passphrase, kdf: kdf, beforeCommit: TestHooks.pauseBeforeCommit)
        let ended = report.sessionsEnded
        Output.note(
            "rotated the master key of \(file.path) (key epoch \(report.previous.number) → \(report.epoch.number)): \(report.items) item\(report.items == 1 ? "" : "s"), \(report.versions) field version\(report.versions == 1 ? "" : "s") and \(report.historyVersions) history version\(report.historyVersions == 1 ? "" : "s") re-encrypted"
                + (passphrase === current ? "" : "; the passphrase changed"))
        Output.note(
            "\(ended) session\(ended == 1 ? "" : "s") ended; other replicas adopt the new key on their next sync or import (the passphrase is asked once there)"
        )
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

    /// The line said after adopting.
    static func message(_ report: RekeyReport) -> String {
        let sessions = report.sessionsEnded
        let who = report.epoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
        let when = Date(timeIntervalSince1970: Double(report.epoch.rekeyedAt) / 1000).ISO8601Format()
        return
            "adopted the new master key made on \(who) at \(when) (key epoch \(report.previous.number) → \(report.epoch.number)): \(report.items) item\(report.items == 1 ? "" : "s") re-encrypted, \(sessions) session\(sessions == 1 ? "" : "s") ended"
    }
}
