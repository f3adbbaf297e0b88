import ArgumentParser
import CofferKit
import CofferSync
import Foundation

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a credential: every field (secrets masked), type, tags, source, expiry, policy, last change, conflicts.",
        discussion: """
            Secret values are shown as ******** unless --reveal is given; attachments are listed \
            with their size (save one with `coffer get NAME --field F --out FILE`). --json prints \
            Schemas/show.schema.json (secret values are null unless --reveal).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Flag(help: "Show secret values.")
    var reveal = false

    @Flag(help: "Print JSON (Schemas/show.schema.json).")
    var json = false

    func run() throws {
        try Show.execute(vault: try options.unlock(), name: name, reveal: reveal, json: json)
    }

    /// Shared with ``FastPath``.
    static func execute(vault: Vault, name: String, reveal: Bool, json: Bool) throws {
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        // Shared vaults: the member behind each replica (docs/sharing.md).
        let members = try vault.memberNamesByReplica()
        if json {
            try Output.json(ShowJSON(item, reveal: reveal, members: members))
            return
        }
        Show.print(item, reveal: reveal, members: members)
    }

    static func print(_ item: Item, reveal: Bool, members: [ReplicaID: String] = [:]) {
        var lines: [String] = []
        lines.append("name:     \(item.name)")
        lines.append("type:     \(item.type.rawValue)")
        lines.append("id:       \(item.id.hex)")
        if !item.tags.isEmpty { lines.append("tags:     \(item.tags.joined(separator: ", "))") }
        if let s = item.source { lines.append("source:   \(s)") }
        if let e = item.expires { lines.append("expires:  \(e)\(item.isExpired() ? " (EXPIRED)" : "")") }
        lines.append("policy:   \(item.policy.rawValue)")
        let by = item.lastWrittenBy.map { " by replica \($0.hex.prefix(8))" + (members[$0].map { " (\($0))" } ?? "") } ?? ""
        lines.append("changed:  \(ISO8601.string(item.updatedAt))\(by)")
        if item.fields.isEmpty {
            lines.append("fields:   (none)")
        } else {
            lines.append("fields:")
            let width = min(item.fields.map(\.name.count).max() ?? 0, 24)
            for f in item.fields {
                let label = f.name.padding(toLength: max(width, f.name.count), withPad: " ", startingAt: 0)
                lines.append("  \(label)  \(display(f, reveal: reveal))")
            }
        }
        for c in item.conflicts {
            lines.append("CONFLICT: \(c.field) has \(c.sides.count) concurrent values (see `coffer conflicts \(item.name)`):")
            for s in c.sides {
                let v = s.value.map { c.isSecret && !reveal ? "********" : oneLine($0) } ?? "(removed)"
                lines.append(
                    "  [\(s.number)]\(s.isShown ? "*" : " ") \(v)  written \(ISO8601.string(s.writtenAt)) by \(s.replica.hex.prefix(8))\(members[s.replica].map { " (\($0))" } ?? "")"
                )
            }
        }
        if item.hasDeleteConflict {
            lines.append("CONFLICT: deleted on one replica while edited on another; kept (see `coffer conflicts`)")
        }
        Output.out(lines.joined(separator: "\n"))
    }

    static func display(_ f: Field, reveal: Bool) -> String {
        if f.isFile { return "(attachment, \(byteCount(f.bytes.count)))" }
        if f.isSecret && !reveal { return "********" }
        return oneLine(f.value)
    }

    /// A value on one line: newlines and other control characters escaped,
    /// so that a value cannot forge lines of the listing.
    static func oneLine(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            switch u {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            default:
                if u.properties.generalCategory == .control || u.properties.generalCategory == .format {
                    out += String(format: "\\u{%X}", u.value)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }

    static func byteCount(_ n: Int) -> String {
        if n < 1024 { return "\(n) bytes" }
        if n < 1024 * 1024 { return String(format: "%.1f KiB", Double(n) / 1024) }
        return String(format: "%.1f MiB", Double(n) / 1_048_576)
    }
}

/// `coffer show --json` (Schemas/show.schema.json).
struct ShowJSON: Encodable {
    struct FieldJSON: Encodable {
        var name: String
        @NullEncoded var value: String?
        var secret: Bool
        var attachment: Bool
        var size: Int
    }
    var item: ItemJSON
    var fields: [FieldJSON]
    var lastWrittenBy: String?
    /// The member behind ``lastWrittenBy`` (shared vaults).
    var lastWrittenByMember: String?

    init(_ item: Item, reveal: Bool, members: [ReplicaID: String] = [:]) {
        self.item = ItemJSON(item, showSecrets: reveal)
        fields = item.fields.map { f in
            FieldJSON(
                name: f.name, value: f.isFile || (f.isSecret && !reveal) ? nil : f.value, secret: f.isSecret,
                attachment: f.isFile, size: f.bytes.count)
        }
        lastWrittenBy = item.lastWrittenBy?.hex
        lastWrittenByMember = item.lastWrittenBy.flatMap { members[$0] }
    }

    enum Keys: String, CodingKey {
        case id, name, type, fields, tags, source, expires, expired, policy, createdAt, updatedAt, vector, conflicts, deleteConflict, lastWrittenBy,
            lastWrittenByMember
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(item.id, forKey: .id)
        try c.encode(item.name, forKey: .name)
        try c.encode(item.type, forKey: .type)
        try c.encode(fields, forKey: .fields)
        try c.encode(item.tags, forKey: .tags)
        try c.encode(item.source, forKey: .source)
        try c.encode(item.expires, forKey: .expires)
        try c.encode(item.expired, forKey: .expired)
        try c.encode(item.policy, forKey: .policy)
        try c.encode(item.createdAt, forKey: .createdAt)
        try c.encode(item.updatedAt, forKey: .updatedAt)
        try c.encode(item.vector, forKey: .vector)
        try c.encode(item.conflicts, forKey: .conflicts)
        try c.encode(item.deleteConflict, forKey: .deleteConflict)
        try c.encode(lastWrittenBy, forKey: .lastWrittenBy)
        try c.encodeIfPresent(lastWrittenByMember, forKey: .lastWrittenByMember)
    }
}
