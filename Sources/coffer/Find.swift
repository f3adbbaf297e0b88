import ArgumentParser
import CofferKit

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Search names, tags, sources, usernames and URLs (never secret values).",
        discussion: """
            Case-insensitive substring search. Prints matching items like `coffer ls`; --json \
            prints Schemas/find.schema.json. Exits 0 with no output when nothing matches (1 with \
            --fail-if-none).
              coffer find github
              coffer find @example.com
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Text to look for.")
    var term: String

    @Flag(help: "Exit 1 when nothing matches.")
    var failIfNone = false

    @Flag(help: "Print JSON (Schemas/find.schema.json).")
    var json = false

    func run() throws {
        guard !term.isEmpty else { throw CofferError(.usage, "the search term is empty", hint: "list everything with `coffer ls`") }
        try Find.execute(vault: options.unlock(), term: term, failIfNone: failIfNone, json: json)
    }

    /// `find` once the vault is unlocked (also the fast path's `find TERM`).
    static func execute(vault: Vault, term: String, failIfNone: Bool = false, json: Bool = false) throws {
        let all = try vault.list()
        let found = try Vault.find(term, in: all)
        // Freed at exit, not one by one (see List.retained).
        List.retained = all
        if json {
            try Output.json(found.map(FoundJSON.init))
        } else {
            List.printTable(found.map(\.summary))
        }
        if found.isEmpty {
            Output.note("no item matches '\(term)'")
            if failIfNone { throw ExitCode(1) }
        }
    }
}

/// One `coffer find --json` entry: the `ls --json` keys plus `matched`.
struct FoundJSON: Encodable {
    var summary: SummaryJSON
    var matched: [String]

    init(_ f: FoundItem) {
        summary = SummaryJSON(f.summary)
        matched = f.matchedIn
    }

    enum Keys: String, CodingKey { case matched }
    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(matched, forKey: .matched)
    }
}
