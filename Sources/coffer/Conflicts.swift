import ArgumentParser
import CofferCrypto
import CofferKit
import Foundation

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List every open conflict: concurrent values, deletes against edits, shared names.",
        discussion: """
            A merge keeps concurrent writes side by side instead of dropping one (docs/sync.md). \
            Each conflict shows the item, the field and its sides with their time and replica; the \
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
        if json {
            try Output.json(ConflictsJSON(conflicts: all.map(ConflictJSON.init)))
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
                let who = "\(s.replica.hex.prefix(8)):\(s.counter)"
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

struct ConflictsJSON: Encodable {
    var conflicts: [ConflictJSON]
}

struct ConflictJSON: Encodable {
    struct Side: Encodable {
        var number: Int
        var action: String
        var value: String?
        var field: String?
        var shown: Bool
        var writtenAt: Date
        var replica: String
        var counter: UInt64
        var itemId: String?

        enum CodingKeys: String, CodingKey { case number, action, value, field, shown, writtenAt, replica, counter, itemId }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(number, forKey: .number)
            try c.encode(action, forKey: .action)
            try c.encode(value, forKey: .value)
            try c.encode(field, forKey: .field)
            try c.encode(shown, forKey: .shown)
            try c.encode(writtenAt, forKey: .writtenAt)
            try c.encode(replica, forKey: .replica)
            try c.encode(counter, forKey: .counter)
            try c.encode(itemId, forKey: .itemId)
        }
    }
    var kind: String
    var item: String
    var itemId: String
    var field: String
    var secret: Bool
    var sides: [Side]

    init(_ c: VaultConflict) {
        kind = c.kind.rawValue
        item = c.item
        itemId = c.itemID.hex
        field = c.field
        secret = c.isSecret
        sides = c.sides.map {
            Side(
                number: $0.number, action: $0.action.rawValue, value: $0.value, field: $0.field, shown: $0.isShown,
                writtenAt: $0.writtenAt, replica: $0.replica.hex, counter: $0.counter, itemId: $0.itemID?.hex)
        }
    }
}
