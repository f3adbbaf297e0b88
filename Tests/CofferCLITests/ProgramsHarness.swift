import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `coffer` process started in the background (for signal tests).
final class RunningCoffer: @unchecked Sendable {
    let pid: pid_t
    let dir: URL
    private var finished: CLIResult?

    init(pid: pid_t, dir: URL) {
        self.pid = pid
        self.dir = dir
    }

    deinit {
        if finished == nil { kill(pid, SIGKILL); var s: Int32 = 0; waitpid(pid, &s, 0) }
        try? FileManager.default.removeItem(at: dir)
    }

    /// Sends `signal` to the coffer process itself.
    func send(_ signal: Int32) { kill(pid, signal) }

    /// Waits (at most `timeout` seconds, then kills it) and collects output.
    func wait(timeout: Double = 20) -> CLIResult {
        if let finished { return finished }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if Date() > deadline && !killed { kill(pid, SIGKILL); killed = true }
            usleep(10_000)
        }
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? String(contentsOfFile: dir.appendingPathComponent("out").path, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: dir.appendingPathComponent("err").path, encoding: .utf8)) ?? ""
        let result = CLIResult(status: killed ? -1 : code, stdout: out, stderr: err)
        finished = result
        return result
    }
}

extension TestHome {
    /// `args` with `--passphrase-fd 3` right after the subcommand (before a
    /// `--` that starts the command of `coffer run`).
    static func withPassphraseFd(_ args: [String]) -> [String] {
        guard let first = args.first else { return args }
        return [first, "--passphrase-fd", "3"] + args.dropFirst()
    }

    /// Runs a command that needs the passphrase, giving it on fd 3.
    @discardableResult
    func coffer(_ args: [String], stdin: String? = nil, env: [String: String] = [:]) -> CLIResult {
        run(TestHome.withPassphraseFd(args), stdin: stdin, fd3: passphrase + "\n", env: env)
    }

    /// Starts `coffer args… --passphrase-fd 3` without waiting for it.
    func startUnlocked(_ args: [String], env extra: [String: String] = [:]) -> RunningCoffer {
        var env = environment
        for (k, v) in extra { env[k] = v }
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bg-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let inPath = tmp.appendingPathComponent("in").path
        let fd3Path = tmp.appendingPathComponent("fd3").path
        FileManager.default.createFile(atPath: inPath, contents: Data())
        FileManager.default.createFile(atPath: fd3Path, contents: Data((passphrase + "\n").utf8))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, tmp.appendingPathComponent("out").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, tmp.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 3, fd3Path, O_RDONLY, 0)
        // env -C execs coffer in place: the pid is coffer's own.
        let full = ["/usr/bin/env", "-C", root.path, CofferBinary.path] + TestHome.withPassphraseFd(args)
        let argv = full.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, envp)
        precondition(rc == 0, "posix_spawn failed: \(rc)")
        return RunningCoffer(pid: pid, dir: tmp)
    }

    /// Waits until a file exists (a child's "ready" marker).
    func waitForFile(_ path: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: path) { return true }
            usleep(20_000)
        }
        return false
    }

    /// A file's permission bits.
    func mode(_ path: String) -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { return -1 }
        return Int(st.st_mode & 0o7777)
    }
}

