internal import CCofferSys
import CofferCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Child processes that take a secret on standard input through a pipe
/// (never in argv or the environment): clipboard tools, and coffer's own
/// detached clipboard clearer.
public enum PipedProcess {
    /// What a run produced.
    public struct Result: Sendable {
        public var termination: ChildTermination
        /// Standard output, when captured (at most `maxOutput` bytes).
        public var output: [UInt8]
        /// The run was stopped after `timeoutMillis`.
        public var timedOut: Bool
    }

    /// The first executable called `name` on `path` (a `PATH` value).
    public static func which(_ name: String, path: String?) -> String? {
        for dir in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs `arguments` (`arguments[0]` an absolute path) with exactly
    /// `environment` (nil: this process's own), `input` written to its stdin through a pipe (stdin
    /// is /dev/null when nil), stdout captured when `captureOutput`
    /// (else /dev/null), stderr /dev/null. A child still running after
    /// `timeoutMillis` is killed.
    ///
    /// A tool that forks a daemon (xclip, wl-copy) must not hold a pipe
    /// we wait on: only capture the output of tools that exit.
    public static func run(
        _ arguments: [String], environment: [String]?, input: [UInt8]?, captureOutput: Bool, maxOutput: Int = 64 << 20,
        timeoutMillis: Int = 5000
    ) throws(ChildProcessError) -> Result {
        precondition(!arguments.isEmpty)
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        if input != nil, !ChildProcess.makePipe(&inPipe, nonblocking: false) {
            throw .spawnFailed(arguments[0], "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        if captureOutput, !ChildProcess.makePipe(&outPipe, nonblocking: false) {
            closeAll(inPipe)
            throw .spawnFailed(arguments[0], "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let pid: pid_t
        do { pid = try spawn(arguments, environment: environment, actions: &actions, detached: false) } catch {
            closeAll(inPipe)
            closeAll(outPipe)
            throw error
        }
        if input != nil { close(inPipe[0]) }
        if captureOutput { close(outPipe[1]) }

        // SIGPIPE from a child that stops reading early must not end us.
        var ign = sigaction()
        ign.__sigaction_handler.sa_handler = SIG_IGN
        var oldPipe = sigaction()
        sigaction(SIGPIPE, &ign, &oldPipe)
        defer { sigaction(SIGPIPE, &oldPipe, nil) }

        if let input {
            writeAll(inPipe[1], input)
            close(inPipe[1])
        }
        let deadline = monotonicMillis() + Int64(timeoutMillis)
        var output: [UInt8] = []
        if captureOutput {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let left = deadline - monotonicMillis()
                if left <= 0 { break }
                var fds = [pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0)]
                let n = poll(&fds, 1, Int32(min(left, 1000)))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { continue }
                let got = buffer.withUnsafeMutableBytes { read(outPipe[0], $0.baseAddress, $0.count) }
                if got < 0 && errno == EINTR { continue }
                if got <= 0 { break }
                if output.count < maxOutput { output += buffer[0..<min(got, maxOutput - output.count)] }
            }
            buffer.withUnsafeMutableBytes { Sodium.memzero($0.baseAddress!, $0.count) }
            close(outPipe[0])
        }
        let (termination, timedOut) = waitForExit(pid, deadline: deadline)
        return Result(termination: termination, output: output, timedOut: timedOut)
    }

    /// A child started with its standard input a pipe whose write end this
    /// process holds (stdout and stderr /dev/null). It can get ready — exec,
    /// load its libraries, connect to the display — while the caller does
    /// other work, and it sees the end of its input only when ``finish``
    /// closes the pipe. ``cancel()`` (and dropping it unfinished) kills it
    /// first, so a tool that acts on end of input (xclip, wl-copy, xsel set
    /// the clipboard then) never acts on a cancelled one.
    public final class Started {
        public let pid: Int32
        private var stdinFD: Int32
        private var done = false

        init(pid: Int32, stdinFD: Int32) {
            self.pid = pid
            self.stdinFD = stdinFD
        }

        /// Writes `input`, closes the pipe, and waits for the child to exit
        /// (killed after `timeoutMillis`).
        public func finish(input: [UInt8], timeoutMillis: Int = 5000) -> Result {
            precondition(!done, "finished twice")
            done = true
            PipedProcess.writeAndClose(stdinFD, input)
            let (termination, timedOut) = waitForExit(pid, deadline: monotonicMillis() + Int64(timeoutMillis))
            return Result(termination: termination, output: [], timedOut: timedOut)
        }

        /// Kills the child before it can see the end of its input, then
        /// reaps it.
        public func cancel() {
            guard !done else { return }
            done = true
            // SIGKILL is pending before the pipe closes: the child cannot
            // return from a read with end of input and go on.
            kill(pid, SIGKILL)
            close(stdinFD)
            _ = waitForExit(pid, deadline: monotonicMillis() + 5000)
        }

        deinit { cancel() }
    }

    /// Starts `arguments` (`arguments[0]` an absolute path) with exactly
    /// `environment` (nil: this process's own), its stdin a pipe held open until
    /// ``Started/finish(input:timeoutMillis:)``.
    public static func start(_ arguments: [String], environment: [String]?) throws(ChildProcessError) -> Started {
        let (pid, stdinFD) = try spawnWithInputPipe(arguments, environment: environment, detached: false)
        return Started(pid: pid, stdinFD: stdinFD)
    }

    /// Writes `input` to a child's stdin pipe and closes it, with SIGPIPE
    /// ignored meanwhile (a child that exits early must not end coffer).
    static func writeAndClose(_ fd: Int32, _ input: [UInt8]) {
        var ign = sigaction()
        ign.__sigaction_handler.sa_handler = SIG_IGN
        var oldPipe = sigaction()
        sigaction(SIGPIPE, &ign, &oldPipe)
        writeAll(fd, input)
        close(fd)
        sigaction(SIGPIPE, &oldPipe, nil)
    }

    /// Spawns `arguments` with stdin the read end of a new pipe and
    /// /dev/null for stdout and stderr; returns the pid and the pipe's
    /// write end.
    private static func spawnWithInputPipe(
        _ arguments: [String], environment: [String]?, detached: Bool
    ) throws(ChildProcessError) -> (pid_t, Int32) {
        precondition(!arguments.isEmpty)
        var inPipe: [Int32] = [-1, -1]
        guard ChildProcess.makePipe(&inPipe, nonblocking: false) else {
            throw .spawnFailed(arguments[0], "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let pid: pid_t
        do { pid = try spawn(arguments, environment: environment, actions: &actions, detached: detached) } catch {
            closeAll(inPipe)
            throw error
        }
        close(inPipe[0])
        return (pid, inPipe[1])
    }

    /// Reaps `pid`, killing it once `deadline` (monotonic milliseconds)
    /// has passed. Waits on a pidfd, which wakes the moment the child
    /// exits; where pidfd_open is unavailable (Linux before 5.3), polls at
    /// 50 µs doubling to 0.5 ms.
    static func waitForExit(_ pid: pid_t, deadline: Int64) -> (ChildTermination, timedOut: Bool) {
        let pidfd = CCofferSys_pidfd_open(pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        var timedOut = false
        var status: Int32 = 0
        var pause: UInt32 = 50
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            let left = deadline - monotonicMillis()
            if left <= 0 && !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            if pidfd >= 0 {
                var fds = [pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 1, timedOut ? 1000 : Int32(min(max(left, 1), 1000)))
            } else {
                usleep(pause)
                pause = min(pause * 2, 500)
            }
        }
        let termination =
            status & 0x7f == 0
            ? ChildTermination(exitCode: (status >> 8) & 0xff, signal: nil)
            : ChildTermination(exitCode: nil, signal: status & 0x7f)
        return (termination, timedOut)
    }

    /// Starts `arguments` in a process group of its own (so the terminal's
    /// Ctrl-C, Ctrl-\ and hang-up, sent to the foreground group, never
    /// reach it), not waited for, its stdin a pipe (written with
    /// ``Detached/send(_:)``) and /dev/null for stdout and stderr. It
    /// outlives this process.
    public static func spawnDetached(_ arguments: [String], environment: [String]?) throws(ChildProcessError) -> Detached {
        let (_, stdinFD) = try spawnWithInputPipe(arguments, environment: environment, detached: true)
        return Detached(stdinFD: stdinFD)
    }

    /// The write end of a detached child's standard input: ``send(_:)``
    /// gives it its input; dropping it unsent gives it an empty one.
    public final class Detached {
        private var stdinFD: Int32

        init(stdinFD: Int32) { self.stdinFD = stdinFD }

        /// Writes `input` and closes the pipe.
        public func send(_ input: [UInt8]) {
            guard stdinFD >= 0 else { return }
            PipedProcess.writeAndClose(stdinFD, input)
            stdinFD = -1
        }

        deinit { if stdinFD >= 0 { close(stdinFD) } }
    }

    /// Reads standard input to its end (at most `max` bytes).
    public static func readStandardInput(max: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count < max {
            let got = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            out += buffer[0..<min(got, max - out.count)]
        }
        buffer.withUnsafeMutableBytes { Sodium.memzero($0.baseAddress!, $0.count) }
        return out
    }

    private static func spawn(
        _ arguments: [String], environment: [String]?, actions: inout posix_spawn_file_actions_t, detached: Bool
    ) throws(ChildProcessError) -> pid_t {
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attr, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attr, &none)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        // Not a session of its own (POSIX_SPAWN_SETSID): with scheduler
        // autogroups (the default on desktop kernels) setsid moves the
        // child into a new task group while this process, vforked, waits
        // for its exec — 2.3–2.9 ms per `coffer clip` on a loaded machine
        // (docs/benchmarks-verbs.md). A process group of its own is enough
        // to keep the terminal's signals away.
        if detached {
            flags |= POSIX_SPAWN_SETPGROUP
            posix_spawnattr_setpgroup(&attr, 0)
        }
        posix_spawnattr_setflags(&attr, Int16(flags))
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        // nil: this process's own environment, passed as it is (no copy).
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup($0) } + [nil] }
        var pid: pid_t = 0
        let rc =
            envp.map { posix_spawn(&pid, arguments[0], &actions, &attr, argv, $0) }
            ?? posix_spawn(&pid, arguments[0], &actions, &attr, argv, environ)
        for p in argv { free(p) }
        for p in envp ?? [] {
            if let p { Sodium.memzero(p, strlen(p)) }
            free(p)
        }
        guard rc == 0 else {
            switch rc {
            case ENOENT: throw .notFound(arguments[0])
            case EACCES, ENOEXEC, EISDIR, EPERM: throw .notExecutable(arguments[0], String(cString: strerror(rc)))
            default: throw .spawnFailed(arguments[0], String(cString: strerror(rc)))
            }
        }
        return pid
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            written += n
        }
    }

    private static func closeAll(_ fds: [Int32]) { for fd in fds where fd >= 0 { close(fd) } }

    static func monotonicMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
