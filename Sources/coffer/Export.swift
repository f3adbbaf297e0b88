import ArgumentParser
import CofferKit
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write an encrypted bundle for another machine (or, with --format, a plaintext export).",
        discussion: """
            Writes a bundle (docs/bundle-format.md) holding every item whose policy is `sync`; \
            `local-only` items never enter a bundle. With --since SUMMARY (a file written by \
            `coffer summary --out FILE` on the receiving machine) the bundle holds only what \
            that machine has not seen. The file is written atomically with mode 0600.

            With --format json|csv|keepass-xml --plaintext, writes every item UNENCRYPTED instead \
            (`coffer help import`): json is Coffer's lossless format (`coffer import --from \
            coffer-json` reads it back; --history adds earlier field values), keepass-xml is what \
            `keepassxc-cli import` reads. With --format kdbx (no --plaintext), writes an ENCRYPTED KeePass \
            database instead (KDBX 4, Argon2id, ChaCha20) that KeePassXC, KeePassDX and Strongbox open: \
            every field, attachment, tag, expiry and earlier value; its password is asked twice, or read \
            from --target-passphrase-fd N or --target-passphrase-file F. Attachments go into json (base64) and keepass-xml (KeePass \
            attachments); csv leaves them out, naming each item in a warning. Local-only items only \
            with --include-local-only; never to a terminal without --force; the file is 0600.

            With --format pass --out DIR [--gpg-id ID…], writes a password-store instead (pass, \
            gopass): one NAME.gpg per item, encrypted by gpg to the recipients of DIR/.gpg-id; no \
            plaintext touches the disk (`coffer help import`).
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: ArgumentHelp("Bundle file to write (replaced atomically; `-` for standard output).", valueName: "file"))
    var out: String

    @Option(name: .long, help: ArgumentHelp("Summary file of the receiver: write a delta bundle.", valueName: "summary"))
    var since: String?

    @OptionGroup var plain: PlaintextExportOptions

    @OptionGroup var kdbx: KDBXExportOptions

    /// The usage rules argument-parser cannot express, checked first in
    /// ``run()`` so that they fail like every other usage error
    /// (`coffer: error:` and exit 64, docs/exit-codes.md).
    func checkUsage() throws(CofferError) {
        try KDBXExportCommand.checkUsage(plain, kdbx, vault: options, out: out)
        if plain.format == KDBXExportCommand.format {
            if since != nil { throw CofferError(.usage, "--since applies to bundles, not to --format kdbx", hint: "see `coffer export --help`") }
            return
        }
        try PlaintextExportCommand.checkUsage(plain, since: since)
    }

    func run() throws {
        try checkUsage()
        if plain.format == KDBXExportCommand.format {
            try KDBXExportCommand.run(plain, kdbx, vaultOptions: options, out: out)
            return
        }
        if plain.format != nil {
            try PlaintextExportCommand.run(plain, vaultOptions: options, out: out)
            return
        }
        try OutputFiles.refuseBinaryToTerminal(out, what: "a bundle")
        let vault = try options.unlock()
        let sinceVector = try since.map { try vault.readSummary(at: $0).vector }
        let report = try vault.exportBundle(to: out, since: sinceVector)
        Output.note("wrote \(report.kind.name) bundle \(OutputFiles.name(out)): \(report.items) item\(report.items == 1 ? "" : "s"), \(report.bytes) bytes")
    }
}
