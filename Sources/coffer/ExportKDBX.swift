import ArgumentParser
import CofferCrypto
import CofferInterop
import CofferKit
import CofferSystem
import Foundation

/// `coffer export --format kdbx` options.
struct KDBXExportOptions: ParsableArguments {
    @Option(
        name: .long, help: ArgumentHelp("--format kdbx: read the new database's password from this open file descriptor.", valueName: "n"))
    var targetPassphraseFd: Int32?

    @Option(name: .long, help: ArgumentHelp("--format kdbx: read the new database's password from this file.", valueName: "file"))
    var targetPassphraseFile: String?
}

/// `coffer export --format kdbx --out FILE` (docs/import-export.md#kdbx-export):
/// an encrypted KeePass database (KDBX 4, Argon2id, ChaCha20), written
/// 0600 and atomically; no plaintext touches the disk.
enum KDBXExportCommand {
    static let format = "kdbx"

    static func checkUsage(_ o: PlaintextExportOptions, _ k: KDBXExportOptions, vault: VaultOptions, out: String) throws(CofferError) {
        guard o.format == format else {
            if k.targetPassphraseFd != nil || k.targetPassphraseFile != nil {
                throw CofferError(.usage, "--target-passphrase-fd and --target-passphrase-file apply only to --format kdbx", hint: "see `coffer export --help`")
            }
            return
        }
        if o.plaintext { throw CofferError(.usage, "--format kdbx is encrypted; drop --plaintext", hint: "see `coffer export --help`") }
        if o.history || o.force || o.csvFormulasAsIs {
            throw CofferError(
                .usage, "--history, --force and --csv-formulas-as-is do not apply to --format kdbx (it always carries each item's history)",
                hint: "see `coffer export --help`")
        }
        if k.targetPassphraseFd != nil && k.targetPassphraseFile != nil {
            throw CofferError(.usage, "give the database password once: --target-passphrase-fd or --target-passphrase-file", hint: "see `coffer export --help`")
        }
        if let a = vault.passphraseFd, let b = k.targetPassphraseFd, a == b {
            throw CofferError(.usage, "the vault's passphrase and the database's password cannot come from the same file descriptor \(a)")
        }
        if out == "-" {
            throw CofferError(.usage, "--format kdbx writes a file; give its name with --out FILE", hint: "see `coffer export --help`")
        }
        if k.targetPassphraseFd == nil && k.targetPassphraseFile == nil && !SecretInput.hasTerminal {
            throw CofferError(
                .usage, "the new database needs a password and there is no terminal to ask on",
                hint: "give it with --target-passphrase-fd N or --target-passphrase-file F")
        }
    }

    static func run(_ o: PlaintextExportOptions, _ k: KDBXExportOptions, vaultOptions: VaultOptions, out: String) throws {
        let vault = try vaultOptions.unlock()
        let password = try PassphraseSource.read(
            fd: k.targetPassphraseFd, file: k.targetPassphraseFile, environment: nil, prompt: "Password for the new KeePass database: ",
            confirm: true)
        guard password.count > 0 else {
            throw CofferError(.usage, "the database password is empty; KeePass would open the file for anyone", hint: "give a password")
        }
        let selection = try vault.exportEntries(includeLocalOnly: o.includeLocalOnly, history: true)
        let bytes = try KDBXWriter.write(selection.entries, password: password)
        do {
            try AtomicFile.writeAtomically(Data(bytes), to: out)
        } catch {
            throw CofferError(error)
        }
        let n = selection.entries.count
        Output.note("wrote \(n) item\(n == 1 ? "" : "s") to \(out) as a KeePass database (KDBX 4, Argon2id, ChaCha20)")
        if !selection.leftOutLocalOnly.isEmpty {
            Output.note(
                "left out \(selection.leftOutLocalOnly.count) local-only item\(selection.leftOutLocalOnly.count == 1 ? "" : "s") (add --include-local-only): \(selection.leftOutLocalOnly.joined(separator: ", "))"
            )
        }
        if !selection.conflicted.isEmpty {
            Output.warn(
                "\(selection.conflicted.joined(separator: ", ")) \(selection.conflicted.count == 1 ? "has" : "have") unresolved conflicts; the shown values were exported (see `coffer conflicts`)"
            )
        }
    }
}
