import CofferKit

/// `coffer get NAME` with a shell session is what scripts run most, and
/// argument-parser's start-up (building the command tree by reflection)
/// costs more than everything else the command does. With COFFER_SESSION
/// set, this handles the daily verbs' option-less forms — `get`, `show`,
/// `otp`, `clip` NAME, `ls`, `ls --tree`, `ls PREFIX`, `find TERM` —, the
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
    static func run(_ args: [String]) throws -> Bool {
        // The detached clipboard clearer `coffer clip` starts.
        if let clear = ClipClear.direct(args) {
            ClipClear.clear(tool: clear.tool, after: clear.after)
            return true
        }
        if try AddFastPath.run(args) { return true }
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

    /// Unlocks the default vault as a parsed command with no options
    /// would (``Unlocking``): with the session the caller found.
    static func unlock() throws(CofferError) -> Vault {
        try Unlocking.unlock(try VaultFile.open(path: VaultLocation.resolve(explicit: nil)))
    }
}
