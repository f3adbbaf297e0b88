import ArgumentParser
import CofferKit
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Merge bundles from other replicas, or import another tool's export (--from).",
        discussion: """
            With --from FORMAT, imports another password manager's export instead (`coffer help import`): \
            pass (a password-store folder, default $PASSWORD_STORE_DIR or ~/.password-store, decrypted \
            by your gpg), keepass-xml, kdbx (KDBX 3.1/4.x read natively, --source-key-file for a key file; its password from \
            --source-passphrase-fd N, --source-passphrase-file F, or a no-echo prompt), bitwarden-json, \
            1password-1pux, csv (Chrome, Firefox, Bitwarden, KeePassXC, LastPass, 1Password 8, KeePass 2 \
            detected; else --columns name=COL,username=COL,…; --lenient skips unreadable lines, each \
            named), dotenv (one item named by --prefix or the file name) and \
            coffer-json. All entries are stored in one transaction: a malformed file (exit 65, naming the \
            line or entry) changes nothing. A name already holding an identical item is skipped, so \
            importing a file twice changes nothing; a different item is kept beside it as 'NAME (2)' \
            (--on-conflict keep-both), left alone (skip) or edited (overwrite: old values stay in its \
            history). --dry-run lists what would be added, changed and skipped, by name only. \
            The source file is read, never copied or deleted.

            Each bundle is merged in one transaction: either all of it is applied or, on any error \
            (truncated, corrupted, modified, foreign or newer bundle), none of it. Concurrent edits \
            of one field are all kept as a conflict. Bundles are applied in the order given. \
            A bundle written after a key rotation is adopted first, as `sync` does: through the \
            member identity (--identity, $COFFER_IDENTITY_FILE, an identity session, or the \
            vault's own), else with the passphrase (docs/sharing.md, "Key rotations"); \
            exit codes: 65 bad bundle, 66 missing file, 77 wrong passphrase or removed member.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Bundle files written by `coffer export` (with --from: the file or folder to import).", valueName: "file"))
    var files: [String] = []

    @OptionGroup var interchange: InterchangeImportOptions

    @Flag(help: "Show item by item and field by field what merging would change; change nothing.")
    var dryRun = false

    /// The usage rules argument-parser cannot express, checked first in
    /// ``run()`` so that they fail like every other usage error
    /// (`coffer: error:` and exit 64, docs/exit-codes.md).
    func checkUsage() throws(CofferError) {
        try InterchangeImportCommand.checkUsage(interchange, files: files)
        if interchange.from != nil { return }
        guard !files.isEmpty else { throw CofferError(.usage, "give at least one bundle file", hint: "see `coffer import --help`") }
    }

    func run() throws {
        try checkUsage()
        if interchange.from != nil {
            try InterchangeImportCommand.run(interchange, vaultOptions: options, files: files, dryRun: dryRun)
            return
        }
        if dryRun {
            let vault = try options.unlock()
            let (reports, preview) = try vault.previewImport(paths: files)
            for r in reports {
                Output.out(MergeReportLine.text("would merge", r.path, r, kind: true))
                if let change = r.passphraseChange { Output.out(change.previewMessage) }
            }
            PreviewPrinter.print(preview)
            Output.note("dry run: nothing was changed")
            return
        }
        var vault = try options.unlock()
        var done: [String] = []
        for file in files {
            defer { Progress.clear() }
            // A bundle written after another replica's `coffer rekey`:
            // adopt its key first (docs/sync.md §Master-key rotation).
            // Standard input can be read once only: a bundle of a newer
            // epoch given as `-` is refused (exit 77); save it to a file.
            if file != "-", case .newer = try vault.keyEpochStatus(ofBundleAt: file) {
                let (next, adopted) = try KeyAdoption.adopt(file, into: vault)
                vault = next
                UnlockedVault.current = next
                Output.note(KeyAdoption.message(adopted))
            }
            let r: ImportReport
            do {
                r = try vault.importBundle(at: file, progress: Progress.importing(file))
            } catch {
                // Each bundle is its own transaction: say plainly that the
                // ones before this one stay imported.
                guard !done.isEmpty else { throw error }
                var e = error
                e.hint =
                    "nothing of \(file) was imported; \(done.joined(separator: ", ")) \(done.count == 1 ? "was" : "were") imported before it and stay\(done.count == 1 ? "s" : "")"
                throw e
            }
            done.append(file)
            Progress.clear()
            if let change = r.rebinding { Output.note(change.message) }
            Output.note(MergeReportLine.text("imported", file, r, kind: true, replica: "from replica", conflicts: .withHint))
            for line in MergeReportLine.skipped(r) { Output.note(line) }
            if let change = r.passphraseChange { Output.note(change.message) }
        }
        // A bundle may show this replica's id used by another vault file.
        if let change = try vault.claimReplica() { Output.note(change.message) }
        if let restamp = try vault.restampFutureWrites() { Output.note(restamp.message) }
    }
}

/// A progress line on stderr for long imports, only when stderr is a
/// terminal (PRODUCT.md: long work shows progress).
enum Progress {
    nonisolated(unsafe) static var shown = false

    static func importing(_ file: String) -> ImportProgress? {
        guard Output.stderrIsTerminal else { return nil }
        return { n, total in
            let of = total.map { " of \($0)" } ?? ""
            try? FileHandle.standardError.write(contentsOf: Data("\rcoffer: importing \(file): \(n)\(of) items".utf8))
            shown = true
        }
    }

    static func clear() {
        if shown {
            try? FileHandle.standardError.write(contentsOf: Data("\r\u{1b}[K".utf8))
            shown = false
        }
    }
}
