import ArgumentParser
import CofferKit
import CofferSync

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete a credential.",
        discussion: """
            The delete syncs as a tombstone: it removes what this machine had seen of the item. An \
            edit made concurrently elsewhere keeps the item (flagged, see `coffer conflicts`).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Flag(name: [.short, .long], help: "Do not ask for confirmation on a terminal.")
    var force = false

    func run() throws {
        let vault = try options.unlockForWriting()
        let item = try vault.item(named: name)
        if !force && Output.stdinIsTerminal {
            Output.err("Delete \(item.name)? [y/N] ")
            guard let answer = readLine(), answer.lowercased().hasPrefix("y") else {
                Output.note("nothing deleted")
                return
            }
        }
        try vault.delete(name)
        Output.note("deleted \(item.name)")
    }
}
