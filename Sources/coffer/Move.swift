import ArgumentParser
import CofferKit

struct Move: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mv",
        abstract: "Rename an item, or every item under a prefix.",
        discussion: """
            coffer mv github personal/github
            coffer mv work/ old-work/      # every item under work/ (both names end in /)
            All renames are one transaction: if any new name is taken, nothing is renamed. A rename \
            is an ordinary write of the item's name, so it syncs like any edit.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name or prefix/.", completion: .custom(Completion.itemNames))
    var from: String

    @Argument(help: "New name or prefix/.")
    var to: String

    func run() throws {
        let vault = try options.unlockForWriting()
        let plan = try vault.plan(from: from, to: to)
        try vault.move(plan)
        for p in plan { Output.note("moved \(p.from) to \(p.to)") }
    }
}

struct Copy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cp",
        abstract: "Copy an item, or every item under a prefix, to new names.",
        discussion: """
            coffer cp work/openai personal/openai
            coffer cp work/ staging/       # every item under work/ (both names end in /)
            A copy is a new item (a new id) with the same fields, attachments, tags, source, expiry, \
            type, sync policy and variable names; all copies are one transaction.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name or prefix/.", completion: .custom(Completion.itemNames))
    var from: String

    @Argument(help: "New name or prefix/.")
    var to: String

    func run() throws {
        let vault = try options.unlockForWriting()
        let plan = try vault.plan(from: from, to: to)
        try vault.copy(plan)
        for p in plan { Output.note("copied \(p.from) to \(p.to)") }
    }
}
