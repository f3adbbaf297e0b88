import ArgumentParser
import CofferKit

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one value of a credential.",
        discussion: """
            Prints the item's primary secret (or --field F) followed by a newline, for use in \
            $(...): export OPENAI_API_KEY="$(coffer get work/openai)". With --json, prints the whole \
            item (or the one field) as JSON (Schemas/item.schema.json, Schemas/field-value.schema.json).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.")
    var name: String

    @Option(help: "Field to print (default: the type's primary secret).")
    var field: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        try Get.show(vault: try options.unlock(), name: name, field: field, json: json)
    }

    /// Prints the value (shared with ``FastPath``).
    static func show(vault: Vault, name: String, field: String?, json: Bool) throws {
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        if json && field == nil {
            try Output.json(ItemJSON(item))
            return
        }
        let chosen: Field
        if let field {
            guard let f = item.field(field) else {
                throw CofferError(.itemNotFound, "item '\(item.name)' has no field '\(field)'",
                    hint: item.fields.isEmpty ? "it has no fields" : "its fields are: \(item.fields.map(\.name).joined(separator: ", "))")
            }
            chosen = f
        } else {
            guard let f = item.primaryField else {
                throw CofferError(.itemNotFound, "item '\(item.name)' has no fields", hint: "add one with `coffer edit \(item.name) --field KEY=VALUE`")
            }
            chosen = f
        }
        if json {
            try Output.json(FieldValueJSON(name: item.name, field: chosen.name, value: chosen.value, secret: chosen.isSecret))
        } else {
            Output.out(chosen.value)
        }
    }
}

/// Warnings printed on stderr whenever a credential is read.
enum ItemWarnings {
    static func emit(for item: Item) {
        if let e = item.expires, item.isExpired() {  // no calendar work for items without expiry (hot path)
            Output.warn("'\(item.name)' expired on \(e); renew it and run `coffer edit \(item.name) --expires …`")
        }
        for c in item.conflicts {
            Output.warn("'\(item.name)' field \(c.field) has \(c.sides.count) concurrent values; showing one, see `coffer conflicts`")
        }
        if item.hasDeleteConflict {
            Output.warn("'\(item.name)' was deleted on one machine while edited on another; it is kept, see `coffer conflicts`")
        }
    }
}
