import ArgumentParser
import CofferKit
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an encrypted bundle for another machine.",
        discussion: """
            Writes a bundle (docs/bundle-format.md) holding every item whose policy is `sync`;
            `local-only` items never enter a bundle. With --since SUMMARY (a file written by
            `coffer summary --out FILE` on the receiving machine) the bundle holds only what
            that machine has not seen. The file is written atomically with mode 0600.
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: ArgumentHelp("Bundle file to write (replaced atomically).", valueName: "file"))
    var out: String

    @Option(name: .long, help: ArgumentHelp("Summary file of the receiver: write a delta bundle.", valueName: "summary"))
    var since: String?

    func run() throws {
        let vault = try options.unlock()
        let sinceVector = try since.map { try vault.readSummary(at: $0).vector }
        let report = try vault.exportBundle(to: out, since: sinceVector)
        Output.note("wrote \(report.kind.name) bundle \(out): \(report.items) item\(report.items == 1 ? "" : "s"), \(report.bytes) bytes")
    }
}

struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write this vault's summary, for `coffer export --since` elsewhere.",
        discussion: """
            The summary lists, for every replica, the newest change this vault has seen. It holds
            no credential and is not secret beyond the ids it names. Give it to the machine that
            exports: `coffer export --since SUMMARY --out FILE` then writes only what is missing here.
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: ArgumentHelp("Summary file to write.", valueName: "file"))
    var out: String

    func run() throws {
        let vault = try options.unlock()
        try vault.writeSummary(to: out)
        Output.note("wrote summary \(out)")
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Merge bundles from other replicas into this vault.",
        discussion: """
            Each bundle is merged in one transaction: either all of it is applied or, on any error
            (truncated, corrupted, modified, foreign or newer bundle), none of it. Concurrent edits
            of one field are all kept as a conflict. Bundles are applied in the order given;
            exit codes: 65 bad bundle, 66 missing file, 77 wrong passphrase.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Bundle files written by `coffer export`.", valueName: "file"))
    var files: [String]

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one bundle file") }
    }

    func run() throws {
        let vault = try options.unlock()
        for file in files {
            defer { Progress.clear() }
            let r = try vault.importBundle(at: file, progress: Progress.importing(file))
            Progress.clear()
            var line = "imported \(file) (\(r.kind.name), from replica \(r.exportingReplica.hex.prefix(8))): \(r.added) added, \(r.changed) changed, \(r.unchanged) unchanged"
            if r.conflictsOpened > 0 { line += ", \(r.conflictsOpened) new conflict\(r.conflictsOpened == 1 ? "" : "s") (see `coffer conflicts`)" }
            Output.note(line)
        }
    }
}

struct Clone: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create this machine's vault from a full bundle.",
        discussion: """
            Creates a new replica of the vault that exported FILE (same vault and passphrase, a new
            replica id) at --vault PATH (default: the usual vault path), then imports the bundle.
            Asks for the passphrase of the exporting vault. Refuses to replace an existing file
            (exit 73); on any failure no vault file is left behind.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("A full bundle written by `coffer export`.", valueName: "file"))
    var file: String

    func run() throws {
        let path = options.path
        // Checked again inside clone; here they spare asking for a passphrase.
        _ = try Vault.inspectBundle(at: file)
        if FileManager.default.fileExists(atPath: path) {
            throw CofferError(.vaultExists, "a file already exists at \(path)", hint: "choose another --vault path, or import the bundle into that vault with `coffer import`")
        }
        let passphrase = try options.passphrase()
        defer { Progress.clear() }
        let r = try Vault.clone(bundleAt: file, to: path, passphrase: passphrase, progress: Progress.importing(file))
        Progress.clear()
        let info = try VaultFile.open(path: path).info()
        Output.note("created vault \(path) from \(file): \(r.added) item\(r.added == 1 ? "" : "s")")
        Output.note("vault id \(info.vaultID.hex), replica id \(info.replicaID.hex)")
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
            FileHandle.standardError.write(Data("\rcoffer: importing \(file): \(n)\(of) items".utf8))
            shown = true
        }
    }

    static func clear() {
        if shown {
            FileHandle.standardError.write(Data("\r\u{1b}[K".utf8))
            shown = false
        }
    }
}
