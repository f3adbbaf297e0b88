import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A finished (or killed) child process: exit status (128+N for signal
/// N), whether the time limit killed it, raw standard output.
struct TimedResult: CustomStringConvertible {
    var status: Int32
    var timedOut: Bool
    var stdout: Data
    var stderr: String

    var text: String { String(decoding: stdout, as: UTF8.self) }
    var description: String { "exit \(status)\(timedOut ? " (timed out, killed)" : "")\n--- stdout\n\(text.prefix(2000))\n--- stderr\n\(stderr)" }
}

/// posix_spawn with a time limit: a child still running at the deadline
/// is killed (SIGKILL) and reported as timed out, so a hang fails a test
/// instead of stopping the suite.
enum TimedSpawn {
    static func run(
        _ exe: String, _ args: [String], environment: [String: String], workDir: String,
        stdin: String? = nil, timeout: Double = 60
    ) -> TimedResult {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tspawn-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let inPath = tmp.appendingPathComponent("in").path
        let outPath = tmp.appendingPathComponent("out").path
        let errPath = tmp.appendingPathComponent("err").path
        FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // Own process group: a time-out kills the child and its children.
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attr, 0)

        let argv = (["/usr/bin/env", "-C", workDir, exe] + args).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/env", &actions, &attr, argv, envp)
        guard rc == 0 else { return TimedResult(status: -1, timedOut: false, stdout: Data(), stderr: "posix_spawn failed: \(rc)") }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            if Date() > deadline && !timedOut {
                timedOut = true
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
            }
            usleep(2_000)
        }
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data()
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return TimedResult(status: code, timedOut: timedOut, stdout: out, stderr: err)
    }
}

extension TestHome {
    /// Runs `coffer args…` with a time limit and the passphrase on fd 3
    /// when `unlocked`; stdout kept as bytes.
    func timed(_ args: [String], unlocked: Bool = false, stdin: String? = nil, env extra: [String: String] = [:], timeout: Double = 60) -> TimedResult {
        var env = environment
        for (k, v) in extra { env[k] = v }
        var argv = args
        if unlocked {
            // The passphrase from a file (fd 3 needs the plain harness).
            let pw = path("passphrase.txt")
            if !FileManager.default.fileExists(atPath: pw) {
                FileManager.default.createFile(atPath: pw, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
            }
            argv += ["--passphrase-file", pw]
        }
        return TimedSpawn.run(CofferBinary.path, argv, environment: env, workDir: root.path, stdin: stdin, timeout: timeout)
    }

    /// `sh -c script` in the sandbox with this home's environment plus
    /// `COFFER` (the binary) and `PW` (a passphrase file).
    func shell(_ script: String, env extra: [String: String] = [:], timeout: Double = 60) -> TimedResult {
        let pw = path("passphrase.txt")
        if !FileManager.default.fileExists(atPath: pw) {
            FileManager.default.createFile(atPath: pw, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        }
        var env = environment
        env["COFFER"] = CofferBinary.path
        env["PW"] = pw
        for (k, v) in extra { env[k] = v }
        return TimedSpawn.run("/bin/sh", ["-c", script], environment: env, workDir: root.path, timeout: timeout)
    }

    /// The file type of `path` without following links (`S_IFMT` bits).
    func fileType(_ path: String) -> mode_t? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return st.st_mode & S_IFMT
    }

    /// The names in a folder of the sandbox (sorted).
    func names(in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
    }
}
