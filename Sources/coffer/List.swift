import ArgumentParser
import Foundation
import CofferKit

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List credentials (names, types, tags; no secret values).",
        discussion: """
            coffer ls work/ lists the items under work/; --tree draws the names as a tree.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Only items under this prefix (e.g. work/), or this one item.", completion: .custom(Completion.itemNames))
    var prefix: String?

    @Flag(help: "Draw names as a tree of their path components.")
    var tree = false

    @Option(help: "Only items with this tag.")
    var tag: String?

    @Option(help: "Only items of this type.")
    var type: ItemType?

    @Flag(help: "Only items whose expiry date has passed.")
    var expired = false

    @Option(help: ArgumentHelp("Only items that expire within this span (30d, 6w, 3m, 1y) or have expired.", valueName: "span"))
    var expiring: String?

    @Flag(help: "Print JSON (Schemas/ls.schema.json).")
    var json = false

    func run() throws {
        let horizon = try expiring.map { text throws(CofferError) -> Day in
            guard let days = Day.parseSpan(text) else {
                throw CofferError(.usage, "invalid --expiring '\(text)'", hint: "use a span such as 30d, 6w, 3m, 1y")
            }
            return Day.today.adding(days: days)
        }
        let vault = try options.unlock()
        var items = try vault.list()
        if expired { items = items.filter { $0.expires.map { $0 < Day.today } ?? false } }
        if let horizon { items = items.filter { $0.expires.map { $0 <= horizon } ?? false } }
        if let tag { items = items.filter { $0.tags.contains(tag) } }
        if let type { items = items.filter { $0.type == type } }
        if let prefix {
            // `work/` or `work`: the items under work/ (and one named work).
            let bare = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            items = items.filter { $0.name == bare || $0.name.hasPrefix(bare + "/") }
            if items.isEmpty {
                throw CofferError(.itemNotFound, "no item is named '\(bare)' or under '\(bare)/'", hint: "list everything with `coffer ls`")
            }
        }
        if json {
            if tree { throw CofferError(.usage, "--tree cannot be combined with --json", hint: "the JSON list has every name; build the tree from it") }
            try Output.json(items.map(SummaryJSON.init))
            return
        }
        if tree {
            List.printTree(items.map(\.name))
            return
        }
        List.printTable(items)
    }

    static func printTable(_ items: [ItemSummary]) {
        // One buffer, one write: at 10,000 items a write per line and
        // Foundation's String.padding cost more than reading the vault.
        let width = min(items.map(\.name.count).max() ?? 0, 48)
        let today = Day.today
        var text = ""
        text.reserveCapacity(items.count * 64)
        for s in items {
            var line = s.name
            line.append(String(repeating: " ", count: max(0, width - s.name.count) + 2))
            line.append(s.type.rawValue)
            line.append(String(repeating: " ", count: max(0, 18 - s.type.rawValue.count)))
            var marks: [String] = []
            if s.policy == .localOnly { marks.append("local-only") }
            if let e = s.expires { marks.append(e < today ? "EXPIRED \(e)" : "expires \(e)") }
            if s.hasConflict { marks.append("CONFLICT") }
            if !s.tags.isEmpty { marks.append(s.tags.map { "#\($0)" }.joined(separator: " ")) }
            line += marks.joined(separator: "  ")
            text += line.trimmingTrailingSpaces()
            text += "\n"
        }
        if !text.isEmpty { Output.stdout(Data(text.utf8)) }
    }

    /// Names as a tree, folders first at each level, like `tree`.
    static func printTree(_ names: [String]) {
        final class Node {
            var children: [String: Node] = [:]
            var isItem = false
        }
        let root = Node()
        for n in names {
            var node = root
            for part in n.split(separator: "/") {
                let key = String(part)
                if node.children[key] == nil { node.children[key] = Node() }
                node = node.children[key]!
            }
            node.isItem = true
        }
        var lines: [String] = []
        func walk(_ node: Node, indent: String) {
            let keys = node.children.keys.sorted()
            for (i, k) in keys.enumerated() {
                let child = node.children[k]!
                let last = i == keys.count - 1
                let label = Show.oneLine(k) + (child.children.isEmpty ? "" : "/")
                lines.append(indent + (last ? "└── " : "├── ") + label)
                walk(child, indent: indent + (last ? "    " : "│   "))
            }
        }
        walk(root, indent: "")
        if !lines.isEmpty { Output.out(lines.joined(separator: "\n")) }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.hasSuffix(" ") { s.removeLast() }
        return s
    }
}
