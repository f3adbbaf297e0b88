import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// Options every command that opens a vault shares.
struct VaultOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Vault file (default: $COFFER_VAULT, else $XDG_DATA_HOME/coffer/vault.coffer).", valueName: "path"))
    var vault: String?

    @Option(name: .long, help: ArgumentHelp("Read the passphrase from this open file descriptor.", valueName: "n"))
    var passphraseFd: Int32?

    @Option(name: .long, help: ArgumentHelp("Read the passphrase from this file.", valueName: "file"))
    var passphraseFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Unlock with this member identity file (mode 0600, from `coffer identity new --out`) instead of the passphrase; default $COFFER_IDENTITY_FILE.",
            valueName: "file"))
    var identity: String?

    var path: String { VaultLocation.resolve(explicit: vault) }

    /// The identity file to unlock with, when one is given (--identity, or
    /// $COFFER_IDENTITY_FILE when no session or passphrase option takes
    /// precedence): see ``Unlocking/identityFile(passphraseFd:passphraseFile:identity:)``.
    var identityFile: String? {
        Unlocking.identityFile(passphraseFd: passphraseFd, passphraseFile: passphraseFile, identity: identity)
    }

    /// The passphrase from the first available source: --passphrase-fd,
    /// --passphrase-file, $COFFER_PASSPHRASE, then the terminal (no echo).
    /// `confirm` asks twice on the terminal.
    func passphrase(prompt: String = "Passphrase: ", confirm: Bool = false) throws(CofferError) -> SecretBytes {
        try PassphraseSource.read(fd: passphraseFd, file: passphraseFile, environment: "COFFER_PASSPHRASE", prompt: prompt, confirm: confirm)
    }

    /// Opens the vault without unlocking it.
    func openFile() throws(CofferError) -> VaultFile {
        try VaultFile.open(path: path)
    }

    /// Opens and unlocks the vault: with the shell session in
    /// $COFFER_SESSION when one is set (and no --passphrase-fd/-file is
    /// given), else with the passphrase. An unusable session is an error
    /// (exit 77), never a silent prompt.
    func unlock() throws(CofferError) -> Vault {
        try unlock(try openFile())
    }

    /// Unlocks an already opened vault file, the same way as ``unlock()``.
    func unlock(_ file: VaultFile) throws(CofferError) -> Vault {
        try Unlocking.unlock(file, passphraseFd: passphraseFd, passphraseFile: passphraseFile, identity: identity)
    }

    /// Whether ``unlock()`` will use the shell session (no prompt, no KDF).
    var unlocksWithSession: Bool {
        Unlocking.sessionToken(passphraseFd: passphraseFd, passphraseFile: passphraseFile, identity: identity) != nil
    }

    /// Opens and unlocks the vault for a command that writes: first makes
    /// sure this file still owns its replica id (a copied vault takes a new
    /// one, docs/sync.md) and says so on stderr when it changed; then
    /// re-stamps what this replica wrote while its clock ran fast, and
    /// says so (docs/sync.md, "A clock that ran fast").
    func unlockForWriting() throws(CofferError) -> Vault {
        let vault = try unlock()
        if let change = try vault.claimReplica() { Output.note(change.message) }
        if let restamp = try vault.restampFutureWrites() { Output.note(restamp.message) }
        return vault
    }
}

/// The vault this run unlocked, if any: when a command fails because an
/// item name is unknown, `Coffer.main` asks it for the nearest name.
enum UnlockedVault {
    nonisolated(unsafe) static var current: Vault?
    /// The passphrase that unlocked it, when one did (a session: nil); the
    /// first one tried to adopt another replica's new master key (KeyAdoption).
    nonisolated(unsafe) static var passphrase: SecretBytes?
    /// The member identity that unlocked it, when one did: it adopts
    /// another replica's new master key through its sealed box.
    nonisolated(unsafe) static var identity: MemberIdentity?

    /// `error` with "did you mean …?" in its hint when it is about an unknown
    /// item name and a live item has a name close to it; "modified outside
    /// coffer" (65) instead when the vault holds versions of an item whose
    /// row was deleted (the lookup could not tell it from a name never used).
    static func withSuggestion(_ error: CofferError) -> CofferError {
        guard error.kind == .itemNotFound, let vault = current else { return error }
        if let tampered = vault.tamperingBehindMissingItem() { return tampered }
        guard let missing = error.missingName, let found = vault.suggestions(forMissing: missing)
        else { return error }
        var e = error
        e.hint = hint(for: found)
        return e
    }

    /// The hint for a name no item has, in words: names quoted as a shell
    /// needs them, and a division slash said, not shown (it looks like '/').
    static func hint(for found: MissingNameSuggestion) -> String {
        let shown = found.names.map { "`\(ShellWords.quote($0))`" }
        switch found.reason {
        case .divisionSlash:
            let id = found.itemID.map { "id:" + $0.hex.prefix(8) } ?? "its id"
            return "an item has this name with a division slash (U+2215) in place of each '/' (an import keeps a title's '/' that way); "
                + "address it as `\(id)`, or rename it with `coffer edit \(id) --rename NEW`"
        case .lastComponent:
            return shown.count == 1
                ? "did you mean \(shown[0])? (item names are paths; list them with `coffer ls`)"
                : "did you mean one of \(shown.joined(separator: ", "))? (item names are paths; list them with `coffer ls`)"
        default:
            return "did you mean \(shown[0])? (list items with `coffer ls`)"
        }
    }
}

/// Words as a POSIX shell reads them back: a word of only safe characters
/// as it is, anything else in single quotes (a `'` as `'\''`).
enum ShellWords {
    static func quote(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy { c in
            c.isASCII && (CharacterSet.alphanumerics.contains(c) || "_-./@%+=:,".unicodeScalars.contains(c))
        }
        if safe && !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// How a command unlocks its vault: the one place the command line chooses
/// between the shell session and the passphrase (docs/sessions.md). The
/// parsed commands (``VaultOptions``), the fast paths (``FastPath``,
/// ``AddFastPath``), `clip`'s early start and shell completion all ask here.
enum Unlocking {
    /// The session token to unlock with: $COFFER_SESSION when it is set
    /// and no --passphrase-fd or --passphrase-file is given; nil when the
    /// passphrase is to be read instead.
    static func sessionToken(passphraseFd: Int32? = nil, passphraseFile: String? = nil, identity: String? = nil) -> String? {
        guard passphraseFd == nil, passphraseFile == nil, identity == nil else { return nil }
        return SessionEnvironment.token
    }

    /// The variable naming an identity file to unlock with.
    static let identityVariable = "COFFER_IDENTITY_FILE"

    /// The member identity file to unlock with (docs/sharing.md, "Member
    /// replicas"): --identity; else $COFFER_IDENTITY_FILE when neither a
    /// passphrase option nor the shell session is used. Sources in order:
    /// --passphrase-fd, --passphrase-file, --identity, the session,
    /// $COFFER_IDENTITY_FILE, $COFFER_PASSPHRASE, the terminal.
    static func identityFile(passphraseFd: Int32?, passphraseFile: String?, identity: String?) -> String? {
        guard passphraseFd == nil, passphraseFile == nil else { return nil }
        if let identity { return identity }
        guard SessionEnvironment.token == nil, let v = EnvironmentVariable.value(identityVariable), !v.isEmpty else { return nil }
        return v
    }

    /// Unlocks `file` the chosen way: with the session, or with the
    /// passphrase from its first available source (--passphrase-fd,
    /// --passphrase-file, $COFFER_PASSPHRASE, the terminal). An unusable
    /// session is an error (exit 77), never a silent prompt. The vault
    /// (and the passphrase, when one unlocked it) is kept in
    /// ``UnlockedVault``.
    static func unlock(_ file: VaultFile, passphraseFd: Int32? = nil, passphraseFile: String? = nil, identity: String? = nil) throws(CofferError)
        -> Vault
    {
        let vault: Vault
        if let path = identityFile(passphraseFd: passphraseFd, passphraseFile: passphraseFile, identity: identity) {
            let member = try MemberIdentityFile.readPrivate(path: path)
            vault = try file.unlock(identity: member)
            UnlockedVault.identity = member
        } else if let token = sessionToken(passphraseFd: passphraseFd, passphraseFile: passphraseFile) {
            vault = try Session.unlock(file: file, token: token, directory: .resolve())
        } else {
            let secret = try PassphraseSource.read(
                fd: passphraseFd, file: passphraseFile, environment: "COFFER_PASSPHRASE", prompt: "Passphrase: ", confirm: false)
            vault = try file.unlock(passphrase: secret)
            UnlockedVault.passphrase = secret
        }
        UnlockedVault.current = vault
        return vault
    }
}

/// The session token of this shell, if any.
enum SessionEnvironment {
    /// $COFFER_SESSION when set and not empty.
    static var token: String? {
        guard let v = EnvironmentVariable.value(Session.environmentVariable), !v.isEmpty else { return nil }
        return v
    }
}

/// Passphrase sources in their documented order.
enum PassphraseSource {
    static func read(fd: Int32?, file: String?, environment: String?, prompt: String, confirm: Bool) throws(CofferError) -> SecretBytes {
        do {
            if let fd {
                return try SecretInput.read(fd: fd)
            }
            if let file {
                return try SecretInput.read(path: file)
            }
            if let environment, let value = SecretInput.environment(environment) {
                return value
            }
            let first = try SecretInput.prompt(prompt)
            if confirm {
                let second = try SecretInput.prompt("Repeat passphrase: ")
                guard first.constantTimeEquals(second) else {
                    throw CofferError(.usage, "the two passphrases differ", hint: "run the command again")
                }
            }
            return first
        } catch let e as SecretInputError {
            throw translate(e)
        } catch let e as CofferError {
            throw e
        } catch {
            throw CofferError(.internalError, "\(error)")
        }
    }

    static func translate(_ e: SecretInputError) -> CofferError {
        switch e {
        case .unreadableDescriptor(let fd, let why):
            return CofferError(
                .usage, "cannot read the passphrase from file descriptor \(fd): \(why)", hint: "open the descriptor, e.g. `coffer … --passphrase-fd 3 3<file`")
        case .unreadableFile(let path, let why):
            return CofferError(.fileNotFound, "cannot read the passphrase file \(path): \(why)", hint: "check the --passphrase-file path")
        case .noTerminal:
            return CofferError(
                .locked, "a passphrase is needed and there is no terminal to ask on",
                hint: "use --passphrase-fd N, --passphrase-file F or COFFER_PASSPHRASE, or unlock a session")
        case .tooLong:
            return CofferError(.usage, "the passphrase or value is longer than 64 KiB")
        case .interrupted:
            return CofferError(.usage, "input ended before a newline; nothing was changed")
        }
    }
}
