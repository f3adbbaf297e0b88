import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Everything the CLI prints goes through here: values on stdout, people's
/// messages on stderr with a `coffer:` prefix.
enum Output {
    static func out(_ text: String) {
        stdout(Data((text + "\n").utf8))
    }

    /// Run before exiting when standard output cannot be written (e.g.
    /// `coffer unlock` ends the session it could not hand over).
    nonisolated(unsafe) static var stdoutFailureCleanup: (() -> Void)?

    /// Writes to standard output. A write that fails (a closed descriptor,
    /// a full disk, /dev/full) ends the command with one line and exit 74
    /// (EX_IOERR) instead of Foundation's trap and backtrace.
    static func stdout(_ data: Data) {
        do {
            try FileHandle.standardOutput.write(contentsOf: data)
        } catch {
            stdoutFailureCleanup?()
            err("coffer: error: cannot write to standard output (\(error.localizedDescription))")
            err("coffer: hint: check where the output is redirected")
            exit(74)
        }
    }

    static func err(_ text: String) {
        // Nowhere to report a failure to write to stderr: ignore it.
        try? FileHandle.standardError.write(contentsOf: Data((text + "\n").utf8))
    }

    static func warn(_ text: String) { err("coffer: warning: \(text)") }
    static func note(_ text: String) { err("coffer: \(text)") }

    /// Prints the error and its hint, in the command line's words
    /// (``ErrorWords``), and exits with its code.
    static func fail(_ error: CofferError) -> Never {
        let (message, hint) = ErrorWords.words(error)
        err("coffer: error: \(message)")
        if let hint { err("coffer: hint: \(hint)") }
        exit(error.exitCode)
    }

    /// Stable JSON: sorted keys, no escaped slashes, one trailing newline.
    static func json<T: Encodable>(_ value: T) throws {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        enc.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(ISO8601.string(date))
        }
        let data = try enc.encode(value)
        stdout(data + Data("\n".utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
    static var stdinIsTerminal: Bool { isatty(0) == 1 }
    static var stdoutIsTerminal: Bool { isatty(1) == 1 }
}

enum ISO8601 {
    static func string(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: date)
    }
}
