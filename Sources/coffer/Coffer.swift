import ArgumentParser
import CofferCrypto
import CofferSystem
import CofferKit
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
            66 not found, 73 cannot create, 75 busy, 77 wrong passphrase or locked \
            (docs/exit-codes.md); `coffer check` exits 1 when a required source is not ready.
            """,
        version: CofferVersion.string,
        subcommands: [
            Init.self, Add.self, Get.self, List.self, Edit.self, Remove.self, History.self,
            Unlock.self, Lock.self, Status.self, Passwd.self,
            Read.self, Run.self, Inject.self, Env.self,
            Check.self, Requirements.self,
            Export.self, Import.self, Clone.self, Inspect.self, Summary.self,
            Conflicts.self, Resolve.self, Sync.self, Replicas.self,
            Audit.self,
            GitCredentialCommand.self,
        ])

    static func main() {
        // Before anything can hold a key: no core dumps, no ptrace, and
        // every file we create private to the user.
        ProcessHardening.disableCoreDumps()
        originalUmask = umask(0o077)
        do {
            if try FastPath.run(Array(CommandLine.arguments.dropFirst())) { return }
            var command = try parseAsRoot()
            try command.run()
        } catch let error as CofferError {
            Output.fail(error)
        } catch {
            exit(withError: error)
        }
    }
}

/// The umask coffer was started with, before it set 077 for its own
/// files; `coffer run` gives it back to the command it starts.
nonisolated(unsafe) var originalUmask: mode_t = 0o022

enum CofferVersion {
    static let string = "0.1.0"
}
