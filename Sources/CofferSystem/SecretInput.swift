internal import CCofferSys
import CofferCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a passphrase or secret could not be read.
public enum SecretInputError: Error, Equatable, Sendable {
    /// The file descriptor could not be read (errno text).
    case unreadableDescriptor(Int32, String)
    /// The file could not be opened or read (path, errno text).
    case unreadableFile(String, String)
    /// No terminal to prompt on.
    case noTerminal
    /// More than ``SecretInput/maximumLength`` bytes.
    case tooLong
    /// The prompt was interrupted (end of input before a newline on a
    /// terminal).
    case interrupted
}

/// Reading passphrases and secret values into guarded memory: from a file
/// descriptor, a file, an environment variable, or the terminal with echo
/// off.
public enum SecretInput {
    /// Longest passphrase or secret value accepted from any source.
    public static let maximumLength = 64 * 1024

    /// Reads everything from `fd` until end of file and strips one trailing
    /// newline (`\n`, or `\r\n`). The descriptor is not closed, but a
    /// descriptor above 2 is marked close-on-exec so that no child process
    /// inherits it.
    public static func read(fd: Int32) throws(SecretInputError) -> SecretBytes {
        let scratch = SecretBytes(count: maximumLength + 1) { _ in }
        var total = 0
        var failure: SecretInputError?
        scratch.withWritableBytes { buf in
            while total < buf.count {
                let n = Glibc.read(fd, buf.baseAddress! + total, buf.count - total)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .unreadableDescriptor(fd, String(cString: strerror(errno)))
                    return
                }
                if n == 0 { break }
                total += n
            }
        }
        if let failure { throw failure }
        // The descriptor carried a secret: a program this process starts
        // (`coffer run`) must not inherit it. Standard streams stay as
        // they are.
        if fd > 2 {
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
        guard total <= maximumLength else { throw .tooLong }
        return scratch.prefixStrippingNewline(total)
    }

    /// Reads a whole file (see ``read(fd:)``).
    public static func read(path: String) throws(SecretInputError) -> SecretBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadableFile(path, String(cString: strerror(errno))) }
        defer { close(fd) }
        do {
            return try read(fd: fd)
        } catch .unreadableDescriptor(_, let why) {
            throw .unreadableFile(path, why)
        }
    }

    /// The value of an environment variable, if set (even when empty).
    public static func environment(_ name: String) -> SecretBytes? {
        guard let p = getenv(name) else { return nil }
        let n = strlen(p)
        return SecretBytes(count: n) { out in
            if n > 0 { out.baseAddress!.copyMemory(from: p, byteCount: n) }
        }
    }

    /// Whether a controlling terminal can be opened.
    public static var hasTerminal: Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        if fd < 0 { return false }
        close(fd)
        return true
    }

    /// Prompts on the controlling terminal (`/dev/tty`) with echo off and
    /// reads one line. The terminal's settings are restored afterwards, also
    /// when the user presses Ctrl-C.
    public static func prompt(_ text: String) throws(SecretInputError) -> SecretBytes {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .noTerminal }
        defer { close(fd) }
        var saved = termios()
        let isTTY = tcgetattr(fd, &saved) == 0
        if isTTY {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ICANON)
            TerminalRestore.arm(fd: fd, saved: saved)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if isTTY {
                var s = saved
                tcsetattr(fd, TCSAFLUSH, &s)
                TerminalRestore.disarm()
            }
        }
        _ = text.withCString { write(fd, $0, strlen($0)) }
        let scratch = SecretBytes(count: maximumLength + 1) { _ in }
        var total = 0
        var sawNewline = false
        scratch.withWritableBytes { buf in
            var byte: UInt8 = 0
            while total < buf.count {
                let n = Glibc.read(fd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                if byte == UInt8(ascii: "\n") {
                    sawNewline = true
                    break
                }
                buf[total] = byte
                total += 1
            }
            byte = 0
        }
        _ = "\n".withCString { write(fd, $0, 1) }
        guard total <= maximumLength else { throw .tooLong }
        guard sawNewline else { throw .interrupted }
        return scratch.prefixStrippingNewline(total)
    }
}

/// Restores the terminal if a signal arrives while echo is off.
private enum TerminalRestore {
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var previous: [(Int32, __sighandler_t?)] = []
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(fd: Int32, saved: termios) {
        Self.fd = fd
        Self.saved = saved
        previous = signals.map { sig in
            (
                sig,
                signal(sig) { sig in
                    if TerminalRestore.fd >= 0 {
                        _ = tcsetattr(TerminalRestore.fd, TCSAFLUSH, &TerminalRestore.saved)
                        _ = write(TerminalRestore.fd, "\n", 1)
                    }
                    signal(sig, SIG_DFL)
                    raise(sig)
                }
            )
        }
    }

    static func disarm() {
        for (sig, old) in previous { signal(sig, old) }
        previous.removeAll()
        fd = -1
    }
}
