import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a run of a program (most often the `coffer` binary) produced.
public struct CLIResult: CustomStringConvertible, Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public var description: String { "exit \(status)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    /// stdout without its final newline.
    public var out: String { stdout.hasSuffix("\n") ? String(stdout.dropLast()) : stdout }
}

/// A finished (or killed) child process: exit status (128+N for signal
/// N), whether the time limit killed it, raw standard output.
public struct TimedResult: CustomStringConvertible, Sendable {
    public var status: Int32
    public var timedOut: Bool
    public var stdout: Data
    public var stderr: String

    public var text: String { String(decoding: stdout, as: UTF8.self) }
    public var description: String { "exit \(status)\(timedOut ? " (timed out, killed)" : "")\n--- stdout\n\(text.prefix(2000))\n--- stderr\n\(stderr)" }
}

/// Locates the built `coffer` executable next to the test bundle.
public enum CofferBinary {
    /// The first of `COFFER_BINARY`, the test bundle's folder and the
    /// package's debug build folder that holds an executable `coffer`.
    public static let found: String? = {
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["COFFER_BINARY"] { candidates.append(env) }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("coffer").path)
        // Fallback: the package's debug build folder.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/coffer").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// ``found``, or the end of the test run when there is none.
    public static var path: String {
        guard let found else { fatalError("coffer binary not found; build it with `swift build`") }
        return found
    }
}

/// The one way the tests start a program: posix_spawn through `env -C
/// workDir` (relative paths resolve against the sandbox: glibc lacks a
/// portable addchdir), with files, not pipes, for stdin, stdout, stderr
/// and fd 3 (no pipe deadlocks).
public enum Spawn {
    /// Starts `exe args…` without waiting for it; nil when posix_spawn fails
    /// (`errorCode` gets its code). `fd3` (if given) is readable as file
    /// descriptor 3; `stdin` is standard input (empty when nil). In its
    /// own process group when `ownProcessGroup`, so that a time-out kills
    /// the child and its children.
    public static func start(
        _ exe: String, _ args: [String], stdin: String? = nil, fd3: String? = nil, environment: [String: String],
        workDir: String, ownProcessGroup: Bool = false, errorCode: UnsafeMutablePointer<Int32>? = nil
    ) -> SpawnedProcess? {
        let files = TemporaryDirectory(prefix: "coffer-spawn")
        let inPath = files.path("in")
        let fd3Path = files.path("fd3")
        _ = FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))
        if let fd3 { _ = FileManager.default.createFile(atPath: fd3Path, contents: Data(fd3.utf8)) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, files.path("out"), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, files.path("err"), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if fd3 != nil { posix_spawn_file_actions_addopen(&actions, 3, fd3Path, O_RDONLY, 0) }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        if ownProcessGroup {
            posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attr, 0)
        }

        // env -C execs the program in place: the pid is the program's own.
        let argv = (["/usr/bin/env", "-C", workDir, exe] + args).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/env", &actions, &attr, argv, envp)
        guard rc == 0 else {
            errorCode?.pointee = rc
            return nil
        }
        return SpawnedProcess(pid: pid, files: files, ownProcessGroup: ownProcessGroup)
    }

    /// Runs `exe args…` to its end. A failed posix_spawn stops the test run.
    public static func run(
        _ exe: String, _ args: [String], stdin: String?, fd3: String?, environment: [String: String], workDir: String
    ) -> CLIResult {
        var rc: Int32 = 0
        guard let p = start(exe, args, stdin: stdin, fd3: fd3, environment: environment, workDir: workDir, errorCode: &rc) else {
            preconditionFailure("posix_spawn failed: \(rc)")
        }
        let status = p.wait().status
        return CLIResult(status: status, stdout: p.stdoutText ?? "", stderr: p.stderrText ?? "")
    }

    /// Runs `exe args…` with a time limit: a child still running at the
    /// deadline is killed (SIGKILL, with its process group) and reported as
    /// timed out, so a hang fails a test instead of stopping the suite.
    public static func timed(
        _ exe: String, _ args: [String], environment: [String: String], workDir: String,
        stdin: String? = nil, timeout: Double = 60
    ) -> TimedResult {
        var rc: Int32 = 0
        guard let p = start(exe, args, stdin: stdin, environment: environment, workDir: workDir, ownProcessGroup: true, errorCode: &rc) else {
            return TimedResult(status: -1, timedOut: false, stdout: Data(), stderr: "posix_spawn failed: \(rc)")
        }
        let (status, timedOut) = p.wait(timeout: timeout)
        return TimedResult(status: status, timedOut: timedOut, stdout: p.stdoutData, stderr: p.stderrText ?? "")
    }
}

/// A process started by ``Spawn/start(_:_:stdin:fd3:environment:workDir:ownProcessGroup:errorCode:)``.
/// Killed and reaped when dropped unwaited; its stdin/stdout/stderr files
/// are removed with it.
public final class SpawnedProcess: @unchecked Sendable {
    public let pid: pid_t
    let files: TemporaryDirectory
    let ownProcessGroup: Bool
    private var finished: (status: Int32, timedOut: Bool)?

    init(pid: pid_t, files: TemporaryDirectory, ownProcessGroup: Bool) {
        self.pid = pid
        self.files = files
        self.ownProcessGroup = ownProcessGroup
    }

    deinit {
        if finished == nil {
            kill(pid, SIGKILL)
            var s: Int32 = 0
            waitpid(pid, &s, 0)
        }
    }

    /// Sends `signal` to the process itself.
    public func send(_ signal: Int32) { kill(pid, signal) }

    /// Waits for the end of the process: its exit status (128+N for signal
    /// N). With a `timeout` (seconds), a process still running then is
    /// killed (SIGKILL; its process group too when it has its own) and
    /// reported as timed out.
    @discardableResult
    public func wait(timeout: Double? = nil) -> (status: Int32, timedOut: Bool) {
        if let finished { return finished }
        var status: Int32 = 0
        var timedOut = false
        if let timeout {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid { break }
                if r < 0 && errno != EINTR { break }
                if Date() > deadline && !timedOut {
                    timedOut = true
                    if ownProcessGroup { kill(-pid, SIGKILL) }
                    kill(pid, SIGKILL)
                }
                usleep(2_000)
            }
        } else {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        finished = (code, timedOut)
        return (code, timedOut)
    }

    /// Standard output so far, as bytes.
    public var stdoutData: Data { (try? Data(contentsOf: URL(fileURLWithPath: files.path("out")))) ?? Data() }
    /// Standard output so far as UTF-8 text (nil when it is not).
    public var stdoutText: String? { try? String(contentsOfFile: files.path("out"), encoding: .utf8) }
    /// Standard error so far as UTF-8 text (nil when it is not).
    public var stderrText: String? { try? String(contentsOfFile: files.path("err"), encoding: .utf8) }
}
