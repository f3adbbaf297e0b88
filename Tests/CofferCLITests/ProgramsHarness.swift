import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `coffer` process started in the background (for signal tests).
final class RunningCoffer: @unchecked Sendable {
    let process: SpawnedProcess
    var pid: pid_t { process.pid }

    init(_ process: SpawnedProcess) { self.process = process }

    /// Sends `signal` to the coffer process itself.
    func send(_ signal: Int32) { process.send(signal) }

    /// Waits (at most `timeout` seconds, then kills it) and collects output.
    func wait(timeout: Double = 20) -> CLIResult {
        let (status, killed) = process.wait(timeout: timeout)
        return CLIResult(status: killed ? -1 : status, stdout: process.stdoutText ?? "", stderr: process.stderrText ?? "")
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
        var rc: Int32 = 0
        guard
            let process = Spawn.start(
                CofferBinary.path, TestHome.withPassphraseFd(args), fd3: passphrase + "\n", environment: env, workDir: root.path, errorCode: &rc)
        else { preconditionFailure("posix_spawn failed: \(rc)") }
        return RunningCoffer(process)
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
