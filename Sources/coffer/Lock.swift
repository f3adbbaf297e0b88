import ArgumentParser
import CofferKit
import Foundation

struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract: "End this shell's session (or --all sessions of the vault) and wipe its file.",
        discussion: """
            Without --all, ends the session named by $COFFER_SESSION (its key file is overwritten and \
            removed; the variable itself stays set until you `unset COFFER_SESSION`). With --all, ends \
            every session of the vault (--vault, $COFFER_VAULT or the default), e.g. those of other \
            terminals or cron jobs, in $XDG_RUNTIME_DIR/coffer and in the fallback folders \
            ${TMPDIR:-/tmp}/coffer-UID and /tmp/coffer-UID. Needs no passphrase.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "End every session of this vault, not just this shell's.")
    var all = false

    func run() throws {
        let directory = SessionDirectory.resolve()
        defer {
            directory.sweep()
            SessionFolderWarnings.report(directory)
        }
        if all {
            let file = try options.openFile()
            // Also the fallback folders (under $TMPDIR or /tmp) that a
            // shell without XDG_RUNTIME_DIR used.
            var ended = 0
            for dir in SessionDirectory.allCandidates() {
                ended += Session.endAll(vaultID: file.header.vaultID, directory: dir)
            }
            Output.note("ended \(ended) session\(ended == 1 ? "" : "s") of \(file.path)")
            return
        }
        guard let token = SessionEnvironment.token else {
            Output.note("no session in this shell (COFFER_SESSION is not set); nothing to end")
            return
        }
        if try Session.end(token: token, directory: directory) {
            Output.note("session ended; `unset COFFER_SESSION` to forget it")
        } else {
            Output.note("this session had already ended; `unset COFFER_SESSION` to forget it")
        }
    }
}
