import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Everything the CLI prints goes through here: values on stdout, people's
/// messages on stderr with a `coffer:` prefix.
enum Output {
    static func out(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { writeStdout(UnsafeRawBufferPointer($0)) }
    }

    /// Run before exiting when standard output cannot be written (e.g.
    /// `coffer unlock` ends the session it could not hand over).
    nonisolated(unsafe) static var stdoutFailureCleanup: (() -> Void)?

    /// Writes to standard output. A write that fails (a closed descriptor,
    /// a full disk, /dev/full) ends the command with one line and exit 74
    /// (EX_IOERR) instead of Foundation's trap and backtrace.
    static func stdout(_ data: Data) {
        data.withUnsafeBytes { writeStdout($0) }
    }

    /// write(2) until every byte is out. Not FileHandle: its generic
    /// `Data` path costs a runtime conformance look-up on every `get`.
    private static func writeStdout(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = write(1, base + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let why = n < 0 ? String(cString: strerror(errno)) : "nothing written"
                stdoutFailureCleanup?()
                err("coffer: error: cannot write to standard output (\(why))")
                err("coffer: hint: check where the output is redirected")
                exit(74)
            }
            offset += n
        }
    }

    static func err(_ text: String) {
        // Nowhere to report a failure to write to stderr: ignore it.
        var line = text + "\n"
        line.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let n = write(2, base + offset, bytes.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
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
