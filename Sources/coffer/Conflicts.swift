import ArgumentParser
import CofferCrypto
import CofferKit
import Foundation

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List every open conflict: concurrent values, deletes against edits, shared names.",
        discussion: """
            A merge keeps concurrent writes side by side instead of dropping one (`coffer help sync`). \
            Each conflict shows the item, the field and its sides with their time and replica (and, in \
            a shared vault, the member it is bound to); the \
            side marked * is the one shown meanwhile. Secret values are shown only with \
            --show-secrets. Settle a conflict with `coffer resolve NAME [--field F] --keep N`. \
            Exit status 0 whether or not there are conflicts.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Show secret values (hidden by default).")
    var showSecrets = false

    @Flag(help: "Print JSON (Schemas/conflicts.schema.json).")
    var json = false

    func run() throws {
        let vault = try options.unlock()
        let all = try vault.conflicts(revealSecrets: showSecrets)
        // Shared vaults: the member behind each side's replica (docs/sharing.md, "Attribution").
        let members = try vault.memberNamesByReplica()
        if json {
            try Output.json(ConflictsJSON(conflicts: all.map { ConflictJSON($0, members: members) }))
            return
        }
        if all.isEmpty {
            Output.note("no conflicts")
            return
        }
        for c in all {
            switch c.kind {
            case .field:
                Output.out("\(c.item)  field \(c.field): \(c.sides.count) concurrent values")
            case .delete:
                Output.out("\(c.item)  deleted on one replica while edited on another (kept)")
            case .name:
                Output.out("\(c.item)  \(c.sides.count) items share this name")
            }
            for s in c.sides {
                let when = ISO8601.string(s.writtenAt)
                let who = "\(s.replica.hex.prefix(8)):\(s.counter)" + (members[s.replica].map { " (\($0))" } ?? "")
                let what: String
                switch s.action {
                case .value: what = s.value ?? "(secret)"
                case .removed: what = "(removed)"
                case .delete: what = "(deleted)"
                case .edit: what = "(edited \(s.field ?? "?"))"
                case .item: what = s.value ?? ""
                }
                Output.out("  \(s.number)\(s.isShown && c.kind == .field ? "*" : " ") \(when)  \(who)  \(what)")
            }
            switch c.kind {
            case .field:
                Output.out("  resolve: coffer resolve \(c.item) --field \(c.field) --keep N   (or --value-stdin)")
            case .delete:
                Output.out("  resolve: coffer resolve \(c.item) --field @deleted --keep N   (a delete side removes it, an edit side keeps it)")
            case .name:
                let first = c.sides.first?.value ?? "id:…"
                Output.out("  resolve: coffer edit \(first) --rename NEW, or coffer rm \(first)")
            }
        }
        Output.note("\(all.count) open conflict\(all.count == 1 ? "" : "s")")
    }
}

struct ConflictsJSON: Encodable {
    var conflicts: [ConflictJSON]
}

struct ConflictJSON: Encodable {
    struct Side: Encodable {
        var number: Int
        var action: String
        @NullEncoded var value: String?
        @NullEncoded var field: String?
        var shown: Bool
        var writtenAt: Date
        var replica: String
        var counter: UInt64
        @NullEncoded var itemId: String?
        /// The member who wrote this side (shared vaults); left out otherwise.
        var member: String?
    }
    var kind: String
    var item: String
    var itemId: String
    var field: String
    var secret: Bool
    var sides: [Side]

    init(_ c: VaultConflict, members: [ReplicaID: String] = [:]) {
        kind = c.kind.rawValue
        item = c.item
        itemId = c.itemID.hex
        field = c.field
        secret = c.isSecret
        sides = c.sides.map {
            Side(
                number: $0.number, action: $0.action.rawValue, value: $0.value, field: $0.field, shown: $0.isShown,
                writtenAt: $0.writtenAt, replica: $0.replica.hex, counter: $0.counter, itemId: $0.itemID?.hex, member: members[$0.replica])
        }
    }
}
