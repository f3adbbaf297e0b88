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

    /// The member identity that adopts a newer key through its sealed box,
    /// and whether the passphrase may be asked when it finds none
    /// (docs/sharing.md, "Key rotations"): the identity that unlocked the
    /// vault (`--identity`, `$COFFER_IDENTITY_FILE`, or the one kept in the
    /// shell session `coffer unlock --identity` opened) and never the
    /// passphrase — without a box it was removed; else the identity kept
    /// in the vault (`coffer identity new`), then the passphrase.
    static func identity(of vault: Vault) throws(CofferError) -> (identity: MemberIdentity?, passphraseToo: Bool) {
        if let unlocked = UnlockedVault.identity { return (unlocked, false) }
        if let session = try vault.unlockingIdentity() { return (session, false) }
        return (try vault.memberIdentity(), true)
    }

    /// Adopts the newer key of the bundle `file` (`coffer import`), as
    /// `sync` does: through the member identity of
    /// ``identity(of:)`` when there is one, else (or, for a vault unlocked
    /// with its passphrase, when the identity finds no box) with the
    /// passphrase. A replica unlocked with an identity that finds no box
    /// was removed: exit 77, the vault unchanged.
    static func adopt(_ file: String, into vault: Vault) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        let adopting = try identity(of: vault)
        if let member = adopting.identity {
            do { return try vault.adoptKeyEpoch(ofBundleAt: file, identity: member) } catch
                where adopting.passphraseToo && error.remedy?.action == .askToBeAdded
            {
                // Not sealed to the vault's own identity: the passphrase may still open it.
            }
        }
        return try vault.adoptKeyEpoch(ofBundleAt: file, passphrases: passphrases(for: file))
    }

    /// The line said after adopting.
    static func message(_ report: RekeyReport) -> String {
        let sessions = report.sessionsEnded
        let who = report.epoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
        let when = Date(timeIntervalSince1970: Double(report.epoch.rekeyedAt) / 1000).ISO8601Format()
        return
            "adopted the new master key made on \(who) at \(when) (key epoch \(report.previous.number) → \(report.epoch.number)): \(report.items) item\(report.items == 1 ? "" : "s") re-encrypted, \(sessions) session\(sessions == 1 ? "" : "s") ended"
            + (report.sessionCarriedOver ? "; this shell's session goes on under the new key" : "")
    }
}
