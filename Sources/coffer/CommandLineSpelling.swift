import ArgumentParser
import CofferKit

/// What people type out of habit from git, gopass, pass and other tools,
/// understood before argument-parser sees it (docs/user-guide.md, "Where
/// options go").
enum CommandLineSpelling {
    /// The vault options every vault verb has (VaultOptions), which git and
    /// gopass users put before the verb.
    static let globalOptions = ["--vault", "--passphrase-fd", "--passphrase-file"]

    /// Whether `word` is one of ``globalOptions``. Compared one by one: a
    /// `Set<String>` here cost every command a scan of the binary's
    /// protocol conformances (for `String: Hashable`) before anything else,
    /// 3 % of a `coffer get` (docs/benchmarks.md).
    static func isGlobalOption(_ word: some StringProtocol) -> Bool {
        globalOptions.contains { $0 == word }
    }

    /// `coffer --vault P VERB …` as `coffer VERB --vault P …`: leading vault
    /// options move behind the verb (behind the whole subcommand path, as
    /// in `coffer --vault P requirements add …`), where the verb parses
    /// them. Anything else is returned unchanged, so a leading option that
    /// is no vault option still gets argument-parser's own message.
    static func movingGlobalOptions(_ arguments: [String], root: any ParsableCommand.Type) -> [String] {
        var globals: [String] = []
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if isGlobalOption(word), index + 1 < arguments.count {
                globals += [word, arguments[index + 1]]
                index += 2
            } else if let equals = word.firstIndex(of: "="), isGlobalOption(word[..<equals]) {
                globals.append(word)
                index += 1
            } else {
                break
            }
        }
        guard !globals.isEmpty, index < arguments.count, !arguments[index].hasPrefix("-") else { return arguments }
        var command = root
        var end = index
        while end < arguments.count, let sub = subcommand(named: arguments[end], of: command) {
            command = sub
            end += 1
        }
        guard end > index else { return arguments }
        return Array(arguments[index..<end]) + globals + Array(arguments[end...])
    }

    static func subcommand(named name: String, of command: any ParsableCommand.Type) -> (any ParsableCommand.Type)? {
        command.configuration.subcommands.first { $0.configuration.commandName == name || $0.configuration.aliases.contains(name) }
    }

    /// The command `arguments` name (the deepest subcommand reached) and
    /// the words that named it, for wording a refusal of one of its options.
    static func leaf(_ arguments: [String], root: any ParsableCommand.Type) -> (command: any ParsableCommand.Type, path: [String]) {
        var command = root
        var path = [root.configuration.commandName ?? "coffer"]
        for word in arguments {
            guard let sub = subcommand(named: word, of: command) else { break }
            command = sub
            path.append(word)
        }
        return (command, path)
    }

    /// Other tools' names for an option Coffer spells differently; offered
    /// only when the command has the option named on the right.
    static let synonyms: [String: [String]] = [
        "--timeout": ["--clear-after"],
        "--clear": ["--clear-after"],
        "--output": ["--out"],
        "-o": ["--out"],
        "--user": ["--username"],
        "--login": ["--username"],
        "--pass": ["--passphrase-fd", "--passphrase-file"],
        "--password": ["--passphrase-fd", "--passphrase-file"],
        "--db": ["--vault"],
        "--database": ["--vault"],
        "--store": ["--vault"],
        "--symbols": ["--chars"],
        "--size": ["--length"],
        "--len": ["--length"],
        "--recursive": ["--tree"],
        "--format": ["--json"],
        "--tags": ["--tag"],
        "--otp": ["--totp"],
    ]

    /// The option the user most likely meant by `unknown`, among `options`
    /// (the command's own, in help order): another tool's name for it, the
    /// one long option a short letter abbreviates, or one a typo away.
    static func nearest(to unknown: String, among options: [String]) -> String? {
        let known = Set(options)
        if let spelled = synonyms[unknown]?.first(where: known.contains) { return spelled }
        let longs = options.filter { $0.hasPrefix("--") }
        if unknown.count == 2, unknown.hasPrefix("-"), let letter = unknown.last, letter != "-" {
            let matches = longs.filter { $0.dropFirst(2).first == letter }
            if let first = matches.first { return first }
        }
        if unknown.hasPrefix("--") {
            let bare = String(unknown.dropFirst(2))
            // A prefix (`--clear` of `--clear-after`) or a word of it.
            if let prefixed = longs.first(where: { $0.dropFirst(2).hasPrefix(bare) && bare.count >= 3 }) { return prefixed }
            if let close = Suggestion.closest(to: unknown, among: longs) { return close }
        }
        return nil
    }

    /// The option names of `command` as its help lists them (each line of
    /// its OPTIONS section: `-n, --no-symbols <x>   description`).
    static func options(of command: any ParsableCommand.Type) -> [String] {
        let help = Coffer.helpMessage(for: command, includeHidden: true, columns: 400)
        var names: [String] = []
        var inOptions = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            // A heading (no indent) starts a section.
            if let first = line.first, first != " " { inOptions = line.hasSuffix("OPTIONS:") }
            guard inOptions, line.first == " " else { continue }
            let entry = line.drop { $0 == " " }
            guard entry.first == "-" else { continue }
            let spelled = entry.range(of: "  ").map { entry[..<$0.lowerBound] } ?? entry
            for token in spelled.split(whereSeparator: { $0 == " " || $0 == "," }) where token.hasPrefix("-") {
                let name = String(token)
                if name != "-h", name != "--help", !names.contains(name) { names.append(name) }
            }
        }
        return names
    }
}
