import ArgumentParser
import CofferCrypto
import CofferKit
import Foundation

struct Resolve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle a conflict with a write that supersedes all its sides.",
        discussion: """
            --keep N keeps side N as listed by `coffer conflicts`; --value V or --value-stdin writes a \
            new value. The new write has seen every side, so it wins on every replica after the next \
            sync. --field may be left out when the item has one conflict. For a delete conflict \
            (--field @deleted), keeping a delete side removes the item and keeping an edit side keeps \
            it. Two items sharing a name are settled with `coffer edit id:… --rename` or `coffer rm id:…`. \
            Examples:
              coffer resolve work/openai --field key --keep 2
              printf %s "$NEW" | coffer resolve work/openai --field key --value-stdin
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.")
    var name: String

    @Option(help: "The conflicting field (@name, @tags, @deleted … for metadata).")
    var field: String?

    @Option(help: ArgumentHelp("Keep side N.", valueName: "n"))
    var keep: Int?

    @Option(help: ArgumentHelp("Write this value (visible to other processes: prefer --value-stdin for secrets).", valueName: "value"))
    var value: String?

    @Flag(help: "Read the value from standard input (or a no-echo prompt on a terminal).")
    var valueStdin = false

    func run() throws {
        let n = [keep != nil, value != nil, valueStdin].filter { $0 }.count
        guard n == 1 else {
            throw CofferError(.usage, "give exactly one of --keep N, --value V or --value-stdin", hint: "see `coffer resolve --help`")
        }
        let vault = try options.unlockForWriting()
        let resolution: Resolution
        if let keep {
            resolution = .keep(keep)
        } else if let value {
            if let f = field, try vault.item(named: name).field(f)?.isSecret ?? false {
                Output.warn("the value was given on the command line, where other processes and shell history can see it; prefer --value-stdin")
            }
            resolution = .value(value)
        } else {
            var used = options.passphraseFd == 0
            resolution = .value(try ItemInput.readSecret(named: field ?? "the value", stdinUsed: &used))
        }
        let r = try vault.resolve(name, field: field, with: resolution)
        if r.deleted {
            Output.note("resolved \(r.item): deleted")
        } else {
            Output.note("resolved \(r.item) \(r.field)")
        }
    }
}
