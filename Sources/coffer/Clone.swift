import ArgumentParser
import CofferKit
import Foundation

struct Clone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Create this machine's vault from a full bundle.",
        discussion: """
            Creates a new replica of the vault that exported FILE (same vault and passphrase, a new \
            replica id) at --vault PATH (default: the usual vault path), then imports the bundle. \
            Asks for the passphrase of the exporting vault. Refuses a bundle asking Argon2id for more \
            than 1 GiB, 10 passes or 8 lanes (exit 65) unless --allow-expensive-kdf. Refuses to replace an existing file \
            (exit 73); on any failure no vault file is left behind.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("A full bundle written by `coffer export`.", valueName: "file"))
    var file: String

    @Flag(help: "Run Argon2id with the bundle's parameters even above the local ceiling (1 GiB, 10 passes, 8 lanes).")
    var allowExpensiveKdf = false

    func run() throws {
        let path = options.path
        // Checked again inside clone; here they spare asking for a passphrase.
        // (Standard input can be read only once: the clone checks it.)
        if file != "-" {
            let bundle = try Vault.inspectBundle(at: file)
            if !allowExpensiveKdf { try Vault.checkCloneKDF(bundle.header.kdf, path: file) }
        }
        VaultFile.sweepStaleTemporaries(forVaultAt: path)
        if FileManager.default.fileExists(atPath: path) {
            throw CofferError(.vaultExists, "a file already exists at \(path)", hint: "choose another --vault path, or import the bundle into that vault with `coffer import`")
        }
        let passphrase = try options.passphrase()
        defer { Progress.clear() }
        let r = try Vault.clone(bundleAt: file, to: path, passphrase: passphrase, allowExpensiveKDF: allowExpensiveKdf, progress: Progress.importing(file))
        Progress.clear()
        let info = try VaultFile.open(path: path).info()
        Output.note("created vault \(path) from \(file): \(r.added) item\(r.added == 1 ? "" : "s")")
        Output.note("vault id \(info.vaultID.hex), replica id \(info.replicaID.hex)")
    }
}
