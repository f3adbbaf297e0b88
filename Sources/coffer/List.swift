import ArgumentParser
import CofferKit
import Foundation

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
        try List.execute(
            vault: options.unlock(), prefix: prefix, tree: tree, tag: tag, type: type, expired: expired, horizon: horizon, json: json)
    }

    /// `ls` once the vault is unlocked (also the fast path's `ls [PREFIX]`).
    static func execute(
        vault: Vault, prefix: String?, tree: Bool = false, tag: String? = nil, type: ItemType? = nil, expired: Bool = false,
        horizon: Day? = nil, json: Bool = false
    ) throws {
        if json && tree { throw CofferError(.usage, "--tree cannot be combined with --json", hint: "the JSON list has every name; build the tree from it") }
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
            try Output.json(items.map(SummaryJSON.init))
            return
        }
        if tree {
            List.printTree(items.map(\.name))
            retained = items
            return
        }
        List.printTable(items)
        retained = items
    }

    /// The table: name (padded to the longest, at most 48 columns), type
    /// (padded to 18), then local-only, expiry, CONFLICT and #tags.
    static func printTable(_ items: [ItemSummary]) {
        // Bytes into one buffer, one write: at 10,000 items String
        // concatenation, Foundation's padding and a write per line cost
        // more than reading the vault (docs/benchmarks-cli.md).
        var width = 0
        for s in items { width = max(width, columns(s.name)) }
        width = min(width, 48)
        var today: Day?
        var out: [UInt8] = []
        out.reserveCapacity(items.count * 64)
        func pad(_ n: Int) { for _ in 0..<max(0, n) { out.append(0x20) } }
        for s in items {
            let lineStart = out.count
            out.append(contentsOf: s.name.utf8)
            pad(width - columns(s.name) + 2)
            out.append(contentsOf: s.type.rawValue.utf8)
            pad(18 - s.type.rawValue.utf8.count)
            var first = true
            func mark(_ text: String) {
                if !first {
                    out.append(0x20)
                    out.append(0x20)
                }
                first = false
                out.append(contentsOf: text.utf8)
            }
            if s.policy == .localOnly { mark("local-only") }
            if let e = s.expires {
                let t = today ?? Day.today
                today = t
                mark(e < t ? "EXPIRED \(e)" : "expires \(e)")
            }
            if s.hasConflict { mark("CONFLICT") }
            if !s.tags.isEmpty {
                mark("")
                for (i, t) in s.tags.enumerated() {
                    if i > 0 { out.append(0x20) }
                    out.append(0x23)
                    out.append(contentsOf: t.utf8)
                }
            }
            while out.count > lineStart, out[out.count - 1] == 0x20 { out.removeLast() }
            out.append(0x0A)
        }
        if !out.isEmpty { Output.stdout(Data(out)) }
    }

    /// Columns a name takes, as `String.count` counts them (one per
    /// character), without walking grapheme clusters for ASCII names.
    static func columns(_ s: String) -> Int {
        var copy = s
        let ascii = copy.withUTF8 { bytes in
            var ascii = true
            for b in bytes where b >= 0x80 {
                ascii = false
                break
            }
            return ascii
        }
        return ascii ? s.utf8.count : s.count
    }

    /// The listed items, kept until the process exits: releasing 10,000
    /// summaries one by one costs a quarter of a cached `ls`, and the
    /// process ends right after printing them.
    nonisolated(unsafe) static var retained: [ItemSummary] = []

    /// Names as a tree, each level sorted, like `tree`.
    static func printTree(_ names: [String]) {
        // Bytes into one buffer, one write, as printTable: at 10,000 names
        // building a String per line and escaping every label through
        // Show.oneLine cost 250 M instructions (docs/benchmarks-cli.md).
        final class Node {
            var children: [String: Node] = [:]
        }
        let root = Node()
        treeRoot = root
        for n in names {
            var node = root
            for key in components(n) {
                if let next = node.children[key] {
                    node = next
                } else {
                    let next = Node()
                    node.children[key] = next
                    node = next
                }
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(names.count * 32)
        var indent: [UInt8] = []
        let branch = Array("├── ".utf8)
        let lastBranch = Array("└── ".utf8)
        let bar = Array("│   ".utf8)
        let blank = Array("    ".utf8)
        func walk(_ node: Node) {
            let keys = node.children.keys.sorted()
            for (i, key) in keys.enumerated() {
                let child = node.children[key]!
                let last = i == keys.count - 1
                out.append(contentsOf: indent)
                out.append(contentsOf: last ? lastBranch : branch)
                appendLabel(key, to: &out)
                if !child.children.isEmpty { out.append(0x2F) }
                out.append(0x0A)
                let depth = indent.count
                indent.append(contentsOf: last ? blank : bar)
                walk(child)
                indent.removeSubrange(depth...)
            }
        }
        walk(root)
        if !out.isEmpty { Output.stdout(Data(out)) }
    }

    /// The tree, kept until the process exits (as `retained`).
    nonisolated(unsafe) static var treeRoot: AnyObject?

    /// `name.split(separator: "/")` (empty parts dropped), on bytes when
    /// the name is ASCII: splitting Characters walks grapheme clusters,
    /// and a "/" followed by a combining mark is not a "/" Character.
    static func components(_ name: String) -> [String] {
        var copy = name
        let parts: [String]? = copy.withUTF8 { bytes in
            var parts: [String] = []
            var start = 0
            for i in 0...bytes.count {
                if i < bytes.count {
                    if bytes[i] >= 0x80 { return nil }
                    if bytes[i] != 0x2F { continue }
                }
                if i > start {
                    parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
                }
                start = i + 1
            }
            return parts
        }
        return parts ?? name.split(separator: "/").map(String.init)
    }

    /// A path component as Show.oneLine prints it: printable ASCII other
    /// than `\` is itself, so only other labels go through the escaper.
    static func appendLabel(_ label: String, to out: inout [UInt8]) {
        var copy = label
        let plain = copy.withUTF8 { bytes in
            for b in bytes where b < 0x20 || b > 0x7E || b == 0x5C { return false }
            return true
        }
        if plain { out.append(contentsOf: label.utf8) } else { out.append(contentsOf: Show.oneLine(label).utf8) }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.hasSuffix(" ") { s.removeLast() }
        return s
    }
}
