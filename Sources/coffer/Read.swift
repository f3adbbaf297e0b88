import ArgumentParser
import CofferKit
import Foundation

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Print the value a coffer:// reference points to.",
        discussion: """
            coffer read coffer://work/openai          # the item's primary secret \
            coffer read coffer://work/openai/key      # one field \
            coffer read 'coffer://my item/api key'    # spaces are fine (quote them) \
            coffer read 'coffer://a/b?field=c'        # always field c of item a/b \
            The reference grammar and how NAME/FIELD is split are in `coffer help references`. With \
            --json, prints Schemas/read.schema.json. Exit codes: 65 malformed or ambiguous \
            reference, 66 no such item or field, 77 locked.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "A reference: coffer://NAME[/FIELD] or coffer://NAME?field=FIELD.")
    var reference: String

    @Flag(help: "Print JSON (Schemas/read.schema.json).")
    var json = false

    @Flag(name: [.short, .customLong("no-newline")], help: "Do not print a newline after the value.")
    var noNewline = false

    func run() throws {
        let ref = try Reference(parsing: reference, environment: ProcessInfo.processInfo.environment)
        guard let r = try ReferenceResolution.resolve([ref], options: options)[ref] else {
            throw CofferError(.internalError, "reference was not resolved")
        }
        if json {
            try Output.json(ReadJSON(reference: r.reference, id: r.itemID, item: r.item, field: r.field, value: r.value, secret: r.isSecret))
        } else if noNewline {
            Output.stdout(Data(r.value.utf8))
        } else {
            Output.out(r.value)
        }
    }
}

struct ReadJSON: Encodable {
    var reference: String
    var id: String
    var item: String
    var field: String
    var value: String
    var secret: Bool
}
