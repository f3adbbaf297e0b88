import ArgumentParser
import CofferKit
import CofferSystem
import Foundation

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

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Option(help: "Field to print (default: the type's primary secret).", completion: .custom(Completion.fieldNames))
    var field: String?

    @Flag(help: "Print JSON.")
    var json = false

    @Option(
        help: ArgumentHelp("Write the value (an attachment's bytes, exactly) to this file, mode 0600, instead of printing it.", valueName: "file"),
        completion: .file())
    var out: String?

    func run() throws {
        if let out {
            guard !json else { throw CofferError(.usage, "--out cannot be combined with --json") }
            try Get.save(vault: try options.unlock(), name: name, field: field, to: out)
            return
        }
        try Get.show(vault: try options.unlock(), name: name, field: field, json: json)
    }

    /// `--out FILE`: the chosen field's bytes, atomically, mode 0600.
    static func save(vault: Vault, name: String, field: String?, to path: String) throws {
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        let chosen = try choose(item, field)
        do { try AtomicFile.writeAtomically(Data(chosen.bytes), to: path) } catch { throw CofferError(error) }
        Output.note("wrote '\(chosen.name)' of \(item.name) to \(path) (\(Show.byteCount(chosen.bytes.count)), mode 0600)")
    }

    /// Prints the value (shared with ``FastPath``).
    static func show(vault: Vault, name: String, field: String?, json: Bool) throws {
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        if json && field == nil {
            try Output.json(ItemJSON(item))
            return
        }
        let chosen = try choose(item, field)
        if chosen.isFile {
            guard !json else {
                throw CofferError(.usage, "'\(chosen.name)' of '\(item.name)' is an attachment, which JSON cannot carry", hint: "save it with --out FILE")
            }
            if Output.stdoutIsTerminal {
                throw CofferError(
                    .usage, "'\(chosen.name)' of '\(item.name)' is an attachment; it is not printed to a terminal",
                    hint: "save it with --out FILE, or redirect the output")
            }
            Output.stdout(Data(chosen.bytes))
            return
        }
        if json {
            try Output.json(FieldValueJSON(name: item.name, field: chosen.name, value: chosen.value, secret: chosen.isSecret))
        } else {
            Output.out(chosen.value)
        }
    }

    /// The field asked for, or the item's primary field.
    static func choose(_ item: Item, _ field: String?) throws(CofferError) -> Field {
        let chosen: Field
        if let field {
            guard let f = item.field(field) else {
                throw CofferError(
                    .itemNotFound, "item '\(item.name)' has no field '\(field)'",
                    hint: item.fields.isEmpty ? "it has no fields" : "its fields are: \(item.fields.map(\.name).joined(separator: ", "))")
            }
            chosen = f
        } else {
            guard let f = item.primaryField else {
                throw CofferError(.itemNotFound, "item '\(item.name)' has no fields", hint: "add one with `coffer edit \(item.name) --field KEY=VALUE`")
            }
            chosen = f
        }
        return chosen
    }
}

/// Warnings printed on stderr whenever a credential is read.
enum ItemWarnings {
    static func emit(for item: Item) {
        if let e = item.expires, item.isExpired() { // no calendar work for items without expiry (hot path)
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
