import ArgumentParser
import CofferInterop
import CofferKit
import Foundation

/// `coffer export --format pass --out DIR [--gpg-id ID…]`: the vault as a
/// password-store, every entry encrypted by gpg, no plaintext on disk
/// (docs/import-export.md#pass-export).
enum PassExportCommand {
    static let format = "pass"

    static func checkUsage(_ o: PlaintextExportOptions, since: String?) throws(CofferError) {
        if since != nil { throw CofferError(.usage, "--since applies to bundles, not to --format pass", hint: "see `coffer export --help`") }
        if o.plaintext {
            throw CofferError(.usage, "--format pass writes encrypted files: --plaintext does not apply", hint: "leave out --plaintext")
        }
        if o.history || o.csvFormulasAsIs || o.force {
            throw CofferError(.usage, "--history, --csv-formulas-as-is and --force do not apply to --format pass", hint: "see `coffer export --help`")
        }
    }

    static func run(_ o: PlaintextExportOptions, vaultOptions: VaultOptions, out: String) throws {
        if out == "-" { throw CofferError(.usage, "--format pass writes a folder: give it with --out DIR, not -", hint: "e.g. --out ~/.password-store") }
        let vault = try vaultOptions.unlock()
        let selection = try vault.exportEntries(includeLocalOnly: o.includeLocalOnly, history: false)
        var progress: ((Int, Int) -> Void)?
        if Output.stderrIsTerminal {
            progress = { n, total in
                try? FileHandle.standardError.write(contentsOf: Data("\rcoffer: encrypting \(n) of \(total) entries".utf8))
                Progress.shown = true
            }
        }
        let result: PassStoreWriter.Result
        do {
            defer { Progress.clear() }
            result = try PassStoreWriter.write(selection.entries, to: out, gpgIDs: o.gpgIDs, progress: progress)
        }
        let n = result.written.count
        Output.note("wrote \(n) entr\(n == 1 ? "y" : "ies") to the password store \(out), encrypted to \(result.recipients.joined(separator: ", "))")
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
        for w in result.warnings { Output.warn(w.description) }
        Output.note(
            "pass keeps no item types, tags, expiry or history; if the store is a git repository, commit the new entries (pass git add -A; pass git commit)")
    }
}
