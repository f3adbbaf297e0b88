import ArgumentParser
import CofferKit
import Foundation

enum ShellSyntax: String, ExpressibleByArgument, CaseIterable {
    case sh, fish, json

    /// fish when $SHELL is fish, else sh.
    static var detected: ShellSyntax {
        let shell = ProcessInfo.processInfo.environment["SHELL"] ?? ""
        return shell.hasSuffix("/fish") || shell == "fish" ? .fish : .sh
    }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock",
        abstract: "Start a shell session: later commands need no passphrase.",
        discussion: """
            Use as  eval "$(coffer unlock)"  (fish: coffer unlock | source). Asks for the passphrase \
            (--passphrase-fd, --passphrase-file, $COFFER_PASSPHRASE, else the terminal without echo), \
            or opens a member replica with its identity file (--identity FILE or $COFFER_IDENTITY_FILE, \
            mode 0600; docs/sharing.md) \
            and prints the line that sets COFFER_SESSION. The session ends after --timeout without use \
            (default 15m, or session.timeout in $XDG_CONFIG_HOME/coffer/config), after --max-lifetime \
            in any case (default 8h, session.max-lifetime), or with `coffer lock`. Other sessions are \
            not affected. Durations: 90s, 15m, 2h, 1d, 1h30m. See `coffer help sessions`.
            """)

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("End the session after this long without use (e.g. 15m, 2s).", valueName: "duration"))
    var timeout: String?

    @Option(help: ArgumentHelp("End the session this long after unlocking, used or not (e.g. 8h).", valueName: "duration"))
    var maxLifetime: String?

    @Option(help: ArgumentHelp("Syntax of the printed line: sh (bash, zsh, dash), fish, or json (default: from $SHELL).", valueName: "syntax"))
    var shell: ShellSyntax?

    @Flag(help: "Print JSON (Schemas/unlock.schema.json); the same as --shell json.")
    var json = false

    func run() throws {
        let config = try CofferConfig.load(path: CofferConfig.path())
        for w in config.warnings { Output.warn(w) }
        let idle = try duration(timeout, option: "--timeout") ?? config.sessionTimeout ?? Session.defaultIdleTimeout
        let lifetime = try duration(maxLifetime, option: "--max-lifetime") ?? config.sessionMaxLifetime ?? Session.defaultMaxLifetime
        let syntax = json ? .json : shell ?? ShellSyntax.detected
        let file = try options.openFile()
        let vault: Vault
        if let identityFile = options.identityFile {
            vault = try file.unlock(identity: try MemberIdentityFile.readPrivate(path: identityFile))
        } else {
            vault = try file.unlock(passphrase: try options.passphrase())
        }
        let started = try Session.start(vault: vault, idleTimeout: idle, maxLifetime: lifetime, directory: .resolve())
        let info = started.info
        // A session whose token cannot be printed could never be used or
        // locked: end it if the output fails.
        Output.stdoutFailureCleanup = { _ = try? Session.end(token: started.token, directory: .resolve()) }
        defer { Output.stdoutFailureCleanup = nil }
        switch syntax {
        case .sh: Output.out("export \(Session.environmentVariable)='\(started.token)';")
        case .fish: Output.out("set -gx \(Session.environmentVariable) '\(started.token)';")
        case .json:
            try Output.json(
                UnlockJSON(
                    variable: Session.environmentVariable, token: started.token, vault: file.path,
                    vaultId: info.vaultID.hex, sessionId: info.id, idleTimeoutSeconds: info.idleTimeout,
                    expiresAt: info.expiresAt, lifetimeEndsAt: info.lifetimeEndsAt))
        }
        if syntax != .json && Output.stdoutIsTerminal {
            Output.warn("the session was printed, not set; run it as  eval \"$(coffer unlock)\"  (and `coffer lock` this one)")
        }
        SessionFolderWarnings.report(.resolve())
        Output.note(
            "session started for \(file.path): ends after \(SessionDuration.format(idle)) unused, at \(ISO8601.string(info.lifetimeEndsAt)) at the latest")
    }

    func duration(_ text: String?, option: String) throws(CofferError) -> Int64? {
        guard let text else { return nil }
        guard let s = SessionDuration.parse(text), s > 0, s <= Session.longestLifetime else {
            throw CofferError(.usage, "invalid \(option) '\(text)'", hint: "give a duration between 1s and 30d, such as 90s, 15m, 8h or 1h30m")
        }
        return s
    }
}

struct UnlockJSON: Encodable {
    var variable: String
    var token: String
    var vault: String
    var vaultId: String
    var sessionId: String
    var idleTimeoutSeconds: Int64
    var expiresAt: Date
    var lifetimeEndsAt: Date
}
