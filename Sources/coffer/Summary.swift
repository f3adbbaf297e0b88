import ArgumentParser
import CofferKit
import Foundation

struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summary",
        abstract: "Write this vault's summary, for `coffer export --since` elsewhere.",
        discussion: """
            The summary lists, for every replica, the newest change this vault has seen. It holds \
            no credential and is not secret beyond the ids it names. Give it to the machine that \
            exports: `coffer export --since SUMMARY --out FILE` then writes only what is missing here.
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: ArgumentHelp("Summary file to write (`-` for standard output).", valueName: "file"))
    var out: String

    func run() throws {
        try OutputFiles.refuseBinaryToTerminal(out, what: "a summary")
        let vault = try options.unlock()
        try vault.writeSummary(to: out)
        Output.note("wrote summary \(OutputFiles.name(out))")
    }
}
