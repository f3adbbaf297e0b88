import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

@main
struct Coffer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coffer",
        abstract: "A passphrase-unlocked credential vault with file-based sync.",
        discussion: """
            The vault is one encrypted SQLite file: --vault PATH, else $COFFER_VAULT, else \
            $XDG_DATA_HOME/coffer/vault.coffer. Exit codes: 0 success, 64 usage, 65 bad data, \
            66 not found, 73 cannot create, 74 I/O error (a full disk), 75 busy, 77 wrong passphrase, \
            locked or permission denied \
            (`coffer help exit-codes`); `coffer check` exits 1 when a required source is not ready. Shell completions (item and field names too): \
            coffer --generate-completion-script bash|zsh|fish (`coffer help guide`).
            """,
        version: CofferVersion.string,
        subcommands: [
            Init.self, Add.self, Get.self, List.self, Edit.self, Remove.self, History.self,
            Unlock.self, Lock.self, Status.self, Passwd.self,
            Read.self, Run.self, Inject.self, Env.self,
            Check.self, Requirements.self,
            Export.self, Import.self, Clone.self, Inspect.self, Summary.self,
            Conflicts.self, Resolve.self, Sync.self, Replicas.self,
            Verify.self,
            Generate.self,
            SSHKeygen.self, SSHAgentCommand.self,
            Show.self,
            Find.self,
            Clip.self,
            ClipClear.self,
            Otp.self,
            Move.self,
            Copy.self,
            Attach.self,
            Audit.self,
            GitCredentialCommand.self,
            SecretServiceCommand.self,
            Rekey.self,
            IdentityCommand.self,
            MembersCommand.self,
        ])

    static func main() {
        // Before anything can hold a key: no core dumps, no ptrace, and
        // every file we create private to the user.
        CofferKit.Coffer.hardenProcess()
        originalUmask = umask(0o077)
        MemoryLockWarning.install()
        let arguments = CommandLineSpelling.movingGlobalOptions(Array(CommandLine.arguments.dropFirst()), root: Coffer.self)
        do {
            if try FastPath.run(arguments) { return }
            if HelpTopics.run(arguments) { return }
            try checkSubcommand(arguments)
            var command = try LeafParse.command(arguments, among: configuration.subcommands) ?? parseAsRoot(arguments)
            try command.run()
        } catch let error as CofferError {
            Output.fail(UnlockedVault.withSuggestion(error))
        } catch {
            if let usage = usageError(error, arguments: arguments) { Output.fail(usage) }
            exit(withError: error)
        }
    }
}

extension Coffer {
    /// argument-parser's own refusals (an unknown option, a missing or
    /// malformed argument) as the one kind of usage error every command
    /// throws: `coffer: error: …`, a hint with the usage line, exit 64
    /// (docs/exit-codes.md). Nil for what is no failure (`--help`,
    /// `--version`), which argument-parser prints itself.
    static func usageError(_ error: any Error, arguments: [String] = []) -> CofferError? {
        guard exitCode(for: error) == .validationFailure else { return nil }
        let lines = fullMessage(for: error).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let said = message(for: error)
        // "Unknown option '--timeout'" with no suggestion of its own: the
        // nearest option of that verb (CommandLineSpelling.nearest).
        if said.hasPrefix("Unknown option '"), !said.contains("Did you mean"),
            let unknown = said.split(separator: "'").dropFirst().first
        {
            let leaf = CommandLineSpelling.leaf(arguments, root: Coffer.self)
            if let near = CommandLineSpelling.nearest(to: String(unknown), among: CommandLineSpelling.options(of: leaf.command)) {
                return CofferError(.usage, said, hint: "did you mean `\(near)`? (see `\(leaf.path.joined(separator: " ")) --help`)")
            }
        }
        var hint: [String] = []
        if let usage = lines.first(where: { $0.hasPrefix("Usage: ") }) { hint.append(usage) }
        if let see = lines.first(where: { $0.hasPrefix("See '") }),
            let command = see.split(separator: "'").dropFirst().first
        {
            hint.append("see `\(command)`")
        }
        return CofferError(.usage, said, hint: hint.isEmpty ? "see `coffer --help`" : hint.joined(separator: "; "))
    }

    /// A first argument that is no option and no subcommand is a mistyped
    /// verb: say so with the nearest one ("did you mean …?"), exit 64.
    static func checkSubcommand(_ arguments: [String]) throws(CofferError) {
        guard let first = arguments.first, !first.hasPrefix("-"), first != "help" else { return }
        let names = configuration.subcommands.flatMap { [$0.configuration.commandName].compactMap { $0 } + $0.configuration.aliases }
        guard !names.contains(first) else { return }
        if let near = Suggestion.closest(to: first, among: names) {
            throw CofferError(.usage, "unknown command '\(first)'", hint: "did you mean `coffer \(near)`? (see `coffer --help`)")
        }
        throw CofferError(.usage, "unknown command '\(first)'", hint: "see `coffer --help` for the commands")
    }
}

/// The umask coffer was started with, before it set 077 for its own
/// files; `coffer run` gives it back to the command it starts.
nonisolated(unsafe) var originalUmask: mode_t = 0o022

enum CofferVersion {
    static let string = "0.1.0"
}
