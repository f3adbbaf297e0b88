import CofferKit

/// `coffer get NAME` with a shell session is what scripts run most, and
/// argument-parser's start-up (building the command tree by reflection)
/// costs more than everything else the command does. This handles exactly
/// that form — two arguments, `get` and a name not starting with `-`, with
/// COFFER_SESSION set — through the same code as `Get.run` with no options,
/// and leaves every other command line to argument-parser.
/// See docs/benchmarks-sessions.md.
enum FastPath {
    /// Runs the command and returns true when it applies; false otherwise.
    static func run(_ args: [String]) throws -> Bool {
        guard args.count == 2, args[0] == "get", let name = args.last, !name.hasPrefix("-"),
            let token = SessionEnvironment.token
        else { return false }
        let file = try VaultFile.open(path: VaultLocation.resolve(explicit: nil))
        let vault = try Session.unlock(file: file, token: token, directory: .resolve())
        UnlockedVault.current = vault
        try Get.show(vault: vault, name: name, field: nil, json: false)
        return true
    }
}
