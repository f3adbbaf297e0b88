import CofferKit

/// `coffer add` without argument-parser, for its common forms with a shell
/// session: argument-parser's start-up reflects over add's ~20 options and
/// cost more than half of the instructions of a whole `add`
/// (docs/benchmarks-cli.md, "Where a `coffer add` goes").
///
/// Handled: `add NAME` with any of `--type T`, `--field K=V`, `--tag T`,
/// `--source ID`, `--url U`, `--secret K` (the repeatable ones repeated),
/// each option and its value as two arguments, in any order, with
/// `COFFER_SESSION` set. The run is ``Add/execute(_:passphraseOnStdin:unlockForWriting:)``,
/// the same code as the parsed command's. Every other command line — any
/// other option, `--opt=value`, a value that is empty or starts with `-`,
/// an unknown `--type`, an option given twice that takes one value, a
/// second name, a help or completion request — returns nil and goes to
/// argument-parser, which produces its usual output and messages.
enum AddFastPath {
    /// `args` without its `--vault` option (FastPath.withoutVaultOption),
    /// whose value is `vault`.
    static func run(_ args: [String], vault path: String?) throws(CofferError) -> Bool {
        guard args.first == "add", Unlocking.sessionToken() != nil, let request = request(Array(args.dropFirst())) else { return false }
        try Add.execute(request, passphraseOnStdin: false) { () throws(CofferError) in
            // As VaultOptions.unlockForWriting() with no passphrase option:
            // the session unlocks the vault (--vault's, or the default).
            let vault = try FastPath.unlock(vault: path)
            if let change = try vault.claimReplica() { Output.note(change.message) }
            if let restamp = try vault.restampFutureWrites() { Output.note(restamp.message) }
            return vault
        }
        return true
    }

    /// The request `add`'s arguments (after the verb) describe, or nil when
    /// they are not a form this path handles.
    static func request(_ args: [String]) -> Add.Request? {
        var name: String?
        var type: ItemType?
        var source: String?
        var url: String?
        var fields: [String] = []
        var secrets: [String] = []
        var tags: [String] = []
        var i = 0
        while i < args.count {
            let arg = args[i]
            if LeafParse.reserved.contains(arg) || arg.hasPrefix("--generate-completion") { return nil }
            guard arg.hasPrefix("-") else {
                guard name == nil, !arg.isEmpty else { return nil }
                name = arg
                i += 1
                continue
            }
            guard i + 1 < args.count else { return nil }
            let value = args[i + 1]
            guard !value.isEmpty, !value.hasPrefix("-"), !LeafParse.reserved.contains(value) else { return nil }
            switch arg {
            case "--type":
                guard type == nil, let t = ItemType(rawValue: value) else { return nil }
                type = t
            case "--source":
                guard source == nil else { return nil }
                source = value
            case "--url":
                guard url == nil else { return nil }
                url = value
            case "--field": fields.append(value)
            case "--secret": secrets.append(value)
            case "--tag": tags.append(value)
            default: return nil
            }
            i += 2
        }
        guard let name else { return nil }
        return Add.Request(name: name, type: type ?? .apiKey, fields: fields, secrets: secrets, tags: tags, source: source, url: url)
    }
}
