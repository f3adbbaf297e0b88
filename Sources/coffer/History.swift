import ArgumentParser
import CofferKit
import CofferSync

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show every version of a credential's fields, oldest first.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Flag(help: "Show secret values (hidden by default).")
    var showSecrets = false

    @Flag(help: "Print JSON (Schemas/history.schema.json).")
    var json = false

    func run() throws {
        let vault = try options.unlock()
        let entries = try vault.history(name)
        // Shared vaults: who wrote each version (docs/sharing.md).
        let members = try vault.memberNamesByReplica()
        if json {
            try Output.json(
                entries.map {
                    HistoryJSON(
                        field: $0.field, value: ($0.isSecret && !showSecrets) ? nil : $0.value, secret: $0.isSecret,
                        removed: $0.removed, current: $0.isCurrent, writtenAt: $0.writtenAt, replica: $0.replica.hex,
                        counter: $0.counter, member: members[$0.replica])
                })
            return
        }
        for e in entries {
            let value: String
            if e.removed { value = "(removed)" } else if e.isSecret && !showSecrets { value = "(secret)" } else { value = e.value ?? "" }
            let by = members[e.replica].map { "  (by \($0))" } ?? ""
            Output.out("\(ISO8601.string(e.writtenAt))  \(e.replica.hex.prefix(8)):\(e.counter)  \(e.isCurrent ? "*" : " ") \(e.field) = \(value)\(by)")
        }
    }
}
