import CofferKit

/// `coffer get NAME` with a shell session is what scripts run most, and
/// argument-parser's start-up (building the command tree by reflection)
/// costs more than everything else the command does. With COFFER_SESSION
/// set, this handles the daily verbs' option-less forms — `get`, `show`,
/// `otp`, `clip` NAME, `ls`, `ls --tree`, `ls PREFIX`, `find TERM`, each
/// also with `--vault PATH` —, the
/// common forms of `add` (AddFastPath.swift) and the detached clipboard
/// clearer (ClipClear), through the same code as the parsed commands, and
/// leaves every other command line to argument-parser.
///
/// The rule that keeps the two from drifting: a form is handled here only
/// with the values argument-parser would give it, and every default comes
/// from the command's own declaration (`Clip.defaultClearAfter`,
/// `Otp.defaultField`); FastPathDriftTests parses each form both ways and
/// compares. See docs/benchmarks-sessions.md.
enum FastPath {
    /// Runs the command and returns true when it applies; false otherwise.
    static func run(_ arguments: [String]) throws -> Bool {
        // The detached clipboard clearer `coffer clip` starts.
        if let clear = ClipClear.direct(arguments) {
            ClipClear.clear(tool: clear.tool, after: clear.after)
            return true
        }
        guard let (args, path) = withoutVaultOption(arguments) else { return false }
        func unlock() throws(CofferError) -> Vault { try FastPath.unlock(vault: path) }
        if try AddFastPath.run(args, vault: path) { return true }
        if args == ["ls"] || args == ["ls", "--tree"], Unlocking.sessionToken() != nil {
            try List.execute(vault: unlock(), prefix: nil, tree: args.count == 2)
            return true
        }
        guard args.count == 2, let name = args.last, !name.hasPrefix("-"), Unlocking.sessionToken() != nil
        else { return false }
        // The daily verbs with a session and no options take the same
        // path (docs/benchmarks.md, "Daily verbs"); so do `ls PREFIX`,
        // `ls --tree` (above) and `find TERM`.
        switch args[0] {
        case "get", "show", "otp", "clip": break
        case "ls":
            try List.execute(vault: unlock(), prefix: name)
            return true
        case "find" where !name.isEmpty:
            try Find.execute(vault: unlock(), term: name)
            return true
        default: return false
        }
        if args[0] == "clip" {
            // Checks for a clipboard tool before unlocking, as Clip.run does.
            let tool = try ClipboardTool.detect()
            try Clip.execute(name: name, field: nil, tool: tool, seconds: try Clip.parseDelay(Clip.defaultClearAfter), startEarly: true) {
                () throws(CofferError) in
                try unlock()
            }
            return true
        }
        let vault = try unlock()
        switch args[0] {
        case "show": try Show.execute(vault: vault, name: name, reveal: false, json: false)
        case "otp": try Otp.execute(vault: vault, name: name, field: Otp.defaultField, at: nil, json: false)
        default: try Get.show(vault: vault, name: name, field: nil, json: false)
        }
        return true
    }

    /// Unlocks the vault as a parsed command whose only option is
    /// `--vault` (`vault`; nil: none) would (``Unlocking``): with the
    /// session the caller found.
    static func unlock(vault: String?) throws(CofferError) -> Vault {
        try Unlocking.unlock(try VaultFile.open(path: VaultLocation.resolve(explicit: vault)))
    }

    /// The command line without its `--vault PATH` (or `--vault=PATH`),
    /// anywhere after the verb (where `coffer --vault PATH VERB` also puts
    /// it: CommandLineSpelling), and that path; nil, for argument-parser to
    /// handle, when the line gives it twice, ends with a bare `--vault`, or
    /// gives an empty path or one starting with `-`. A line holding `--`
    /// is returned as it is (no fast path takes one). Only the fast paths
    /// use the stripped line; argument-parser always gets the original.
    static func withoutVaultOption(_ args: [String]) -> (args: [String], vault: String?)? {
        guard args.count > 1, !args.contains("--") else { return (args, nil) }
        var rest = [args[0]]
        var vault: String?
        var index = 1
        while index < args.count {
            let word = args[index]
            if word == "--vault" || word.hasPrefix("--vault=") {
                let value: String
                if word == "--vault" {
                    guard index + 1 < args.count else { return nil }
                    value = args[index + 1]
                    index += 2
                } else {
                    value = String(word.dropFirst("--vault=".count))
                    index += 1
                }
                guard vault == nil, !value.isEmpty, !value.hasPrefix("-") else { return nil }
                vault = value
            } else {
                rest.append(word)
                index += 1
            }
        }
        return (rest, vault)
    }
}
