import CofferCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What ``ChildProcess/capture(_:environment:input:)`` collected.
public struct CapturedOutput: Sendable {
    public var termination: ChildTermination
    /// Everything the child wrote to its standard output.
    public var stdout: [UInt8]
    /// Everything it wrote to its standard error.
    public var stderr: [UInt8]
}

extension ChildProcess {
    /// Runs a program (no shell: `arguments[0]` looked up on `PATH`) with
    /// its standard output and error read into memory, for converters such
    /// as `gpg --decrypt` or `keepassxc-cli export`, whose output must never
    /// touch the disk. With `input`, the child's standard input is a pipe
    /// that gets exactly those bytes (a password: never argv, never a file)
    /// and is then closed; without, it inherits this process's standard
    /// input (so gpg-agent's pinentry can ask on the terminal).
    public static func capture(
        _ arguments: [String], environment: [String], input: SecretBytes? = nil
    ) throws(ChildProcessError) -> CapturedOutput {
        guard let program = arguments.first else { throw .notFound("") }
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        var inPipe: [Int32] = [-1, -1]
        guard makePipe(&outPipe, nonblocking: false) else { throw .spawnFailed(program, "cannot create a pipe: \(errnoText())") }
        guard makePipe(&errPipe, nonblocking: false) else {
            close(outPipe[0])
            close(outPipe[1])
            throw .spawnFailed(program, "cannot create a pipe: \(errnoText())")
        }
        if input != nil, !makePipe(&inPipe, nonblocking: false) {
            close(outPipe[0])
            close(outPipe[1])
            close(errPipe[0])
            close(errPipe[1])
            throw .spawnFailed(program, "cannot create a pipe: \(errnoText())")
        }
        // A child that exits before reading its input must not kill us
        // with SIGPIPE: the write fails with EPIPE instead.
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var oldPipe = sigaction()
        sigaction(SIGPIPE, &ignore, &oldPipe)
        defer { sigaction(SIGPIPE, &oldPipe, nil) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        if input != nil { posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0) }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attr, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attr, argv, envp)
        for p in argv { free(p) }
        for p in envp { free(p) }
        close(outPipe[1])
        close(errPipe[1])
        if input != nil { close(inPipe[0]) }
        guard rc == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            if input != nil { close(inPipe[1]) }
            switch rc {
            case ENOENT: throw .notFound(program)
            case EACCES, ENOEXEC, EISDIR, EPERM: throw .notExecutable(program, String(cString: strerror(rc)))
            default: throw .spawnFailed(program, String(cString: strerror(rc)))
            }
        }
        if let input {
            // Small inputs (a password) fit in the pipe buffer: write it
            // all, then close so the child sees the end.
            _ = input.withWritableBytes { buf -> Bool in
                guard let base = buf.baseAddress, buf.count > 0 else { return true }
                return writeAll(inPipe[1], Array(UnsafeRawBufferPointer(start: base, count: buf.count)))
            }
            close(inPipe[1])
        }
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        var open: [(fd: Int32, isOut: Bool)] = [(outPipe[0], true), (errPipe[0], false)]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let n = poll(&fds, nfds_t(fds.count), -1)
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            var i = open.count - 1
            while i >= 0 {
                if fds[i].revents != 0 {
                    let got = buffer.withUnsafeMutableBytes { read(open[i].fd, $0.baseAddress, $0.count) }
                    if got > 0 {
                        if open[i].isOut { stdout.append(contentsOf: buffer[0..<got]) } else { stderr.append(contentsOf: buffer[0..<got]) }
                    } else if got == 0 || errno != EINTR {
                        close(open[i].fd)
                        open.remove(at: i)
                    }
                }
                i -= 1
            }
        }
        for o in open { close(o.fd) }
        Sodium.memzero(&buffer, buffer.count)
        var status: Int32 = 0
        var result = ChildTermination(exitCode: nil, signal: nil)
        while true {
            let r = waitpid(pid, &status, 0)
            if r == pid {
                result =
                    status & 0x7f == 0 ? ChildTermination(exitCode: (status >> 8) & 0xff, signal: nil) : ChildTermination(exitCode: nil, signal: status & 0x7f)
                break
            }
            if r < 0 && errno != EINTR { break }
        }
        return CapturedOutput(termination: result, stdout: stdout, stderr: stderr)
    }
}
