import ArgumentParser

/// Parsing `coffer VERB ARGS…` through the whole command tree costs more
/// than most verbs' own work: argument-parser reflects over every
/// subcommand (to look for a completion-script request and passthrough
/// arguments) before it parses the verb's own options — 22 M of the 39 M
/// instructions of a `coffer add` (docs/benchmarks-cli.md). A verb without
/// subcommands is parsed here as its own root, which reflects only over
/// its own options. Anything this path does not handle as the full parse
/// would — help, version, completion requests, any parse or validation
/// error — returns nil, and the caller parses through the whole tree,
/// which produces the usual output and messages.
enum LeafParse {
    static let reserved: Set<String> = ["-h", "--help", "help", "--version", "--generate-completion-script", "--experimental-dump-help"]

    static func command(_ arguments: [String], among subcommands: [any ParsableCommand.Type]) -> (any ParsableCommand)? {
        guard let verb = arguments.first, !verb.hasPrefix("-") else { return nil }
        let rest = Array(arguments.dropFirst())
        // Anything that asks argument-parser itself for something.
        guard !rest.contains(where: { reserved.contains($0) || $0.hasPrefix("--generate-completion") || $0.hasPrefix("---") }) else { return nil }
        guard let type = subcommands.first(where: { $0.configuration.commandName == verb || $0.configuration.aliases.contains(verb) }),
            type.configuration.subcommands.isEmpty, type.configuration.version.isEmpty
        else { return nil }
        return try? type.parseAsRoot(rest)
    }
}
