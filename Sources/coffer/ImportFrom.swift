import ArgumentParser
import CofferCrypto
import CofferInterop
import CofferKit
import CofferSystem
import Foundation

/// `coffer import --from FORMAT …` options (docs/import-export.md).
struct InterchangeImportOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Import another tool's export instead of bundles: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")).",
            valueName: "format"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("Put imported items under this name prefix (dotenv: the item's name).", valueName: "prefix"))
    var prefix: String?

    @Option(
        name: .long, help: ArgumentHelp("When a name is taken by a different item: skip, overwrite or keep-both (stored as 'NAME (2)').", valueName: "policy"))
    var onConflict: String = ImportConflictPolicy.keepBoth.rawValue

    @Option(name: .long, help: ArgumentHelp("CSV column mapping FIELD=COLUMN,… (e.g. name=title,password=pass).", valueName: "mapping"))
    var columns: String?

    @Flag(name: .long, help: "--from csv: skip lines that cannot be read (each named in a warning) instead of refusing the file.")
    var lenient = false

    @Option(name: .long, help: ArgumentHelp("--from kdbx: read the database password from this open file descriptor.", valueName: "n"))
    var sourcePassphraseFd: Int32?

    @Option(name: .long, help: ArgumentHelp("--from kdbx: read the database password from this file.", valueName: "file"))
    var sourcePassphraseFile: String?

    // `--key-file` is keepassxc-cli's name for it.
    @Option(
        name: [.customLong("source-key-file"), .customLong("key-file")],
        help: ArgumentHelp("--from kdbx: the database's key file (XML v1/v2, 32 bytes, 64 hex digits, or any file).", valueName: "file"))
    var sourceKeyFile: String?

    @Flag(name: .long, help: "Print the import report as JSON (Schemas/import-report.schema.json).")
    var json = false
}

/// The `--from` path of `coffer import`: read the file with CofferInterop,
/// store it with `Vault.importEntries` (one transaction), print the report.
enum InterchangeImportCommand {
    static func checkUsage(_ o: InterchangeImportOptions, files: [String]) throws(CofferError) {
        guard let from = o.from else {
            if o.prefix != nil || o.columns != nil || o.lenient || o.json || o.sourcePassphraseFd != nil || o.sourcePassphraseFile != nil
                || o.sourceKeyFile != nil
                || o.onConflict != ImportConflictPolicy.keepBoth.rawValue
            {
                throw CofferError(
                    .usage, "--prefix, --on-conflict, --columns, --lenient, --json and --source-* apply only with --from FORMAT",
                    hint: "see `coffer import --help`")
            }
            return
        }
        guard let format = ImportFormat(rawValue: from) else {
            throw CofferError(
                .usage, "unknown format '\(from)'; use one of: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", "))",
                hint: "see `coffer import --help`")
        }
        guard ImportConflictPolicy(rawValue: o.onConflict) != nil else {
            throw CofferError(.usage, "--on-conflict takes skip, overwrite or keep-both", hint: "see `coffer import --help`")
        }
        if format == .pass {
            guard files.count <= 1 else { throw CofferError(.usage, "--from pass takes one password-store folder", hint: "see `coffer import --help`") }
        } else {
            guard files.count == 1 else { throw CofferError(.usage, "--from \(from) takes exactly one file", hint: "see `coffer import --help`") }
        }
        if o.columns != nil && format != .csv { throw CofferError(.usage, "--columns applies only to --from csv", hint: "see `coffer import --help`") }
        if o.lenient && format != .csv { throw CofferError(.usage, "--lenient applies only to --from csv", hint: "see `coffer import --help`") }
        if (o.sourcePassphraseFd != nil || o.sourcePassphraseFile != nil || o.sourceKeyFile != nil) && format != .kdbx {
            throw CofferError(.usage, "--source-passphrase-fd/-file and --source-key-file apply only to --from kdbx", hint: "see `coffer import --help`")
        }
    }

    static func run(_ o: InterchangeImportOptions, vaultOptions: VaultOptions, files: [String], dryRun: Bool) throws {
        guard let from = o.from, let format = ImportFormat(rawValue: from), let policy = ImportConflictPolicy(rawValue: o.onConflict) else { return }
        let path = files.first ?? PassStore.defaultFolder
        var readOptions = Importer.Options()
        if let c = o.columns { readOptions.columns = try CSVImport.parseColumns(c) }
        readOptions.dotenvName = o.prefix
        readOptions.lenient = o.lenient
        readOptions.keyFile = o.sourceKeyFile
        if format == .kdbx {
            let fd = o.sourcePassphraseFd
            let file = o.sourcePassphraseFile
            readOptions.sourcePassword = { () throws(CofferError) -> SecretBytes in
                do throws(CofferError) {
                    return try PassphraseSource.read(fd: fd, file: file, environment: nil, prompt: "Password for \(path): ", confirm: false)
                } catch {
                    guard error.kind == .locked else { throw error }
                    throw CofferError(
                        .locked, "\(path) needs its database password and there is no terminal to ask on",
                        hint: "give it with --source-passphrase-fd N or --source-passphrase-file F")
                }
            }
        }
        if format == .pass && Output.stderrIsTerminal {
            readOptions.progress = { n, total in
                try? FileHandle.standardError.write(contentsOf: Data("\rcoffer: decrypting \(n) of \(total) entries".utf8))
                Progress.shown = true
            }
        }
        // Unlock first: a wrong vault passphrase should not cost a whole
        // round of gpg prompts.
        let vault = dryRun ? try vaultOptions.unlock() : try vaultOptions.unlockForWriting()
        var options = InterchangeOptions(prefix: format == .dotenv ? nil : o.prefix, onConflict: policy, dryRun: dryRun)
        if format == .dotenv { options.prefix = nil }
        // KeePass XML and KDBX (the formats of large exports) are parsed on
        // a second thread while the entries before are stored
        // (docs/import-export.md); a KDBX file is decrypted first.
        var streamed: StreamedRead?
        if format == .keepassXML { streamed = try KeePassXML.stream(path: path) }
        if format == .kdbx, let ask = readOptions.sourcePassword {
            streamed = try KDBX.stream(path: path, password: try ask(), keyFile: readOptions.keyFile)
        }
        var read = ImportedFile()
        if streamed == nil {
            defer { Progress.clear() }
            read = try Importer.read(format, path: path, options: readOptions)
        }
        var progress: InterchangeProgress?
        if Output.stderrIsTerminal && max(read.entries.count, streamed?.stream.expectedCount ?? 0) >= 1000 {
            progress = { @Sendable (n: Int, total: Int) in
                try? FileHandle.standardError.write(contentsOf: Data("\rcoffer: importing \(n) of \(total) entries".utf8))
                Progress.shown = true
            }
        }
        let report: InterchangeReport
        do {
            defer { Progress.clear() }
            if let streamed {
                report = try vault.importEntries(streamed.stream, options: options, progress: progress)
                read.warnings = streamed.warnings
            } else {
                report = try vault.importEntries(read.entries, options: options, progress: progress)
            }
        }
        if o.json {
            try Output.json(ImportReportJSON(report, format: format, path: path, warnings: read.warnings))
        } else {
            print(report, format: format, path: path, warnings: read.warnings)
        }
        if format != .pass && format != .kdbx {
            Output.note(
                "\(path) still holds your secrets in plaintext; coffer does not delete it: remove it yourself (e.g. `shred -u \(path)`) when you no longer need it"
            )
        }
    }

    static func print(_ report: InterchangeReport, format: ImportFormat, path: String, warnings: [InterchangeWarning]) {
        let verb = report.dryRun ? "would " : ""
        for line in report.lines {
            switch line.action {
            case .added where report.dryRun:
                Output.out("would add \(line.name)")
            case .added where line.name != line.entry:
                Output.note("\(line.entry): name taken, \(verb)add\(report.dryRun ? "" : "ed") as '\(line.name)'")
            case .overwritten:
                report.dryRun ? Output.out("would overwrite \(line.name)") : Output.note("overwrote \(line.name) (the old values are in `coffer history`)")
            case .skipped:
                report.dryRun
                    ? Output.out("would skip \(line.name) (a different item has the name)")
                    : Output.note("skipped \(line.entry): a different item has the name (--on-conflict skip)")
            case .identical:
                if report.dryRun { Output.out("would skip \(line.name) (identical item already there)") }
            default: break
            }
        }
        let identical = report.lines.filter { $0.action == .identical }.map(\.name)
        if !report.dryRun && !identical.isEmpty {
            let shown = identical.prefix(50).joined(separator: ", ")
            Output.note(
                "already in the vault, identical (skipped): \(shown)\(identical.count > 50 ? " and \(identical.count - 50) more (--json lists all)" : "")")
        }
        for w in warnings { Output.warn(w.description) }
        let counts =
            "\(report.count(.added)) added, \(report.count(.overwritten)) overwritten, \(report.count(.identical)) identical (skipped), \(report.count(.skipped)) skipped (name taken)"
        if report.dryRun {
            Output.note("dry run of \(path) (\(format.rawValue)): \(counts); nothing was changed")
        } else {
            Output.note(
                "imported \(path) (\(format.rawValue)): \(counts)\(warnings.isEmpty ? "" : ", \(warnings.count) warning\(warnings.count == 1 ? "" : "s")")")
        }
    }
}

/// `coffer import --from … --json` (Schemas/import-report.schema.json).
struct ImportReportJSON: Encodable {
    struct Line: Encodable {
        var entry: String
        var name: String
        var action: String
        var origin: String
    }
    struct Warning: Encodable {
        var entry: String
        var message: String
    }
    var format: String
    var path: String
    var dryRun: Bool
    var added: Int
    var overwritten: Int
    var identical: Int
    var skipped: Int
    var items: [Line]
    var warnings: [Warning]

    init(_ r: InterchangeReport, format: ImportFormat, path: String, warnings: [InterchangeWarning]) {
        self.format = format.rawValue
        self.path = path
        dryRun = r.dryRun
        added = r.count(.added)
        overwritten = r.count(.overwritten)
        identical = r.count(.identical)
        skipped = r.count(.skipped)
        items = r.lines.map { Line(entry: $0.entry, name: $0.name, action: $0.action.rawValue, origin: $0.origin) }
        self.warnings = warnings.map { Warning(entry: $0.entry, message: $0.message) }
    }
}
