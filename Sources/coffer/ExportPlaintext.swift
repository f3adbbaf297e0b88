import ArgumentParser
import CofferInterop
import CofferKit
import CofferSystem
import Foundation

/// `coffer export --format json|csv|keepass-xml --plaintext` options.
struct PlaintextExportOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write a PLAINTEXT export instead of a bundle: json (Coffer's lossless format), csv or keepass-xml (for `keepassxc-cli import`). Needs --plaintext.",
            valueName: "format"))
    var format: String?

    @Flag(name: .long, help: "Confirm that the export holds every secret unencrypted.")
    var plaintext = false

    @Flag(name: .long, help: "Include local-only items in a plaintext export.")
    var includeLocalOnly = false

    @Flag(name: .long, help: "--format json: include the earlier values of each item's fields.")
    var history = false

    @Flag(name: .long, help: "Allow a plaintext export to a terminal (--out - on a terminal).")
    var force = false

    @Option(
        name: .customLong("gpg-id"),
        help: ArgumentHelp("--format pass: a recipient of the new password store (written to DIR/.gpg-id); repeatable.", valueName: "id"))
    var gpgIDs: [String] = []

    @Flag(
        name: .long,
        help:
            "--format csv: write cells that start with = + - @, tab or CR unchanged (by default they get a leading ' so that a spreadsheet does not run them as formulas)."
    )
    var csvFormulasAsIs = false
}

/// The plaintext path of `coffer export` (docs/import-export.md#export):
/// its own writing code, through CofferSystem's AtomicFile (0600, atomic,
/// following symbolic links), never through the bundle writer.
enum PlaintextExportCommand {
    static func checkUsage(_ o: PlaintextExportOptions, since: String?) throws(CofferError) {
        if o.format == PassExportCommand.format {
            try PassExportCommand.checkUsage(o, since: since)
            return
        }
        if !o.gpgIDs.isEmpty { throw CofferError(.usage, "--gpg-id applies only to --format pass", hint: "see `coffer export --help`") }
        guard let f = o.format else {
            if o.plaintext || o.includeLocalOnly || o.history || o.force || o.csvFormulasAsIs {
                throw CofferError(
                    .usage, "--plaintext, --include-local-only, --history, --force and --csv-formulas-as-is apply only with --format json|csv|keepass-xml",
                    hint: "see `coffer export --help`")
            }
            return
        }
        guard let format = ExportFormat(rawValue: f) else {
            throw CofferError(
                .usage, "unknown format '\(f)'; use json, csv, keepass-xml or kdbx (a bundle is written without --format)", hint: "see `coffer export --help`")
        }
        if since != nil { throw CofferError(.usage, "--since applies to bundles, not to --format \(f)", hint: "see `coffer export --help`") }
        if o.history && format != .json { throw CofferError(.usage, "--history applies only to --format json", hint: "see `coffer export --help`") }
        if o.csvFormulasAsIs && format != .csv {
            throw CofferError(.usage, "--csv-formulas-as-is applies only to --format csv", hint: "see `coffer export --help`")
        }
    }

    static func run(_ o: PlaintextExportOptions, vaultOptions: VaultOptions, out: String) throws {
        if o.format == PassExportCommand.format {
            try PassExportCommand.run(o, vaultOptions: vaultOptions, out: out)
            return
        }
        guard let f = o.format, let format = ExportFormat(rawValue: f) else { return }
        guard o.plaintext else {
            throw CofferError(
                .usage, "--format \(f) writes every secret unencrypted; refusing without --plaintext",
                hint: "add --plaintext if that is what you want, or export an encrypted bundle (no --format)")
        }
        let toStdout = out == "-"
        if toStdout && Output.stdoutIsTerminal && !o.force {
            throw CofferError(.usage, "refusing to print a plaintext export to the terminal", hint: "write it to a file with --out FILE, or add --force")
        }
        if !toStdout && isatty(out) && !o.force {
            throw CofferError(.usage, "refusing to write a plaintext export to the terminal \(out)", hint: "write it to a file, or add --force")
        }
        let vault = try vaultOptions.unlock()
        let selection = try vault.exportEntries(includeLocalOnly: o.includeLocalOnly, history: o.history)
        let exported = try Exporter.write(format, entries: selection.entries, history: o.history, csvFormulasAsIs: o.csvFormulasAsIs)
        if toStdout {
            Output.stdout(exported.data)
        } else {
            do {
                try AtomicFile.writeAtomically(exported.data, to: out)
            } catch {
                throw CofferError(error)
            }
        }
        let n = selection.entries.count
        Output.note("wrote \(n) item\(n == 1 ? "" : "s") to \(toStdout ? "standard output" : out) as \(format.rawValue)")
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
        for w in exported.warnings { Output.warn(w.description) }
        if !exported.warnings.isEmpty {
            let k = exported.warnings.count
            Output.warn("\(k) item\(k == 1 ? "" : "s") had attachments that \(format.rawValue) cannot hold; they are not in \(toStdout ? "the output" : out)")
        }
        if format == .csv {
            Output.note("CSV keeps no secrecy flags or history; use --format json for a lossless copy")
        }
        if exported.neutralisedCells > 0 {
            // A count, never a value.
            let k = exported.neutralisedCells
            Output.note(
                "\(k) cell\(k == 1 ? "" : "s") that a spreadsheet would run as formulas \(k == 1 ? "was" : "were") written with a leading ' (--csv-formulas-as-is writes them unchanged)"
            )
        }
        Output.warn("\(toStdout ? "the output" : out) holds your secrets unencrypted: keep it safe and delete it (e.g. `shred -u`) when done")
    }

    /// Whether `path` is a terminal device.
    static func isatty(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Glibc.isatty(fd) == 1
    }
}
