import CofferKit
import CofferSystem

#if canImport(Glibc)
import Glibc
#endif

/// File arguments that name where output goes (`--out`, `-o`): `-` is
/// standard output (docs/user-guide.md, "Output files").
enum OutputFiles {
    /// How to name the output in messages.
    static func name(_ path: String) -> String { OutputDestination.displayName(path) }

    /// A bundle or summary is binary: refuse to pour it onto a terminal.
    static func refuseBinaryToTerminal(_ path: String, what: String) throws(CofferError) {
        guard let fd = OutputDestination.descriptorAlias(path), isatty(fd) == 1 else { return }
        throw CofferError(.usage, "refusing to write \(what) (binary data) to a terminal", hint: "redirect it: `… --out - > FILE`, or give a file name")
    }
}

/// What is in the session folder but cannot be a session (issue 13).
enum SessionFolderWarnings {
    /// One warning per `*.session` entry that is not a regular file: it is
    /// skipped, never opened (a FIFO would block) or removed.
    static func report(_ directory: SessionDirectory) {
        for name in directory.irregularEntries() {
            Output.warn("skipped \(directory.path)/\(name): not a regular file, so not a session (remove it)")
        }
    }
}
