import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a run of the `coffer` binary produced.
struct CLIResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    /// stdout without its final newline.
    var out: String { stdout.hasSuffix("\n") ? String(stdout.dropLast()) : stdout }
}

/// Locates the built `coffer` executable next to the test bundle.
enum CofferBinary {
    static let path: String = {
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["COFFER_BINARY"] { candidates.append(env) }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("coffer").path)
        // Fallback: the package's debug build folder.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/coffer").path)
        for c in candidates where FileManager.default.isExecutableFile(atPath: c) { return c }
        fatalError("coffer binary not found; looked in \(candidates)")
    }()
}

/// A throw-away HOME with its own XDG folders and vault, and helpers to run
/// `coffer` against it. Each test gets its own.
final class TestHome: @unchecked Sendable {
    let root: URL
    var passphrase = "correct horse battery staple"
    /// Environment for every run (HOME, XDG_* in the sandbox, nothing
    /// inherited that could point at a real vault).
    var environment: [String: String]

    /// Small KDF settings for speed (and the warning they produce).
    static let fastKDF = ["--kdf-memory", "8M", "--kdf-iterations", "1", "--kdf-parallelism", "1"]

    init() {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-test-\(UUID().uuidString.prefix(12))")
        root = base
        try! FileManager.default.createDirectory(at: base.appendingPathComponent("home"), withIntermediateDirectories: true)
        try! FileManager.default.createDirectory(at: base.appendingPathComponent("run"), withIntermediateDirectories: true)
        chmod(base.appendingPathComponent("run").path, 0o700)
        environment = [
            "HOME": base.appendingPathComponent("home").path,
            "XDG_DATA_HOME": base.appendingPathComponent("home/.local/share").path,
            "XDG_CONFIG_HOME": base.appendingPathComponent("home/.config").path,
            "XDG_RUNTIME_DIR": base.appendingPathComponent("run").path,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "LANG": "C.UTF-8",
        ]
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// Default vault path inside the sandbox.
    var vaultPath: String { root.appendingPathComponent("home/.local/share/coffer/vault.coffer").path }

    func path(_ name: String) -> String { root.appendingPathComponent(name).path }

    /// Runs `coffer args…`. `fd3` (if given) is readable as file
    /// descriptor 3; `stdin` is standard input (empty when nil).
    @discardableResult
    func run(_ args: [String], stdin: String? = nil, fd3: String? = nil, env extra: [String: String] = [:]) -> CLIResult {
        var env = environment
        for (k, v) in extra { env[k] = v }
        return Spawn.run(CofferBinary.path, args, stdin: stdin, fd3: fd3, environment: env, workDir: root.path)
    }

    /// Runs a command that needs the passphrase, giving it on fd 3.
    @discardableResult
    func unlocked(_ args: [String], stdin: String? = nil, env: [String: String] = [:]) -> CLIResult {
        run(args + ["--passphrase-fd", "3"], stdin: stdin, fd3: passphrase + "\n", env: env)
    }

    /// Creates the default vault with fast KDF settings.
    func initVault() {
        let r = unlocked(["init"] + TestHome.fastKDF)
        precondition(r.status == 0, "init failed: \(r)")
    }

    /// The vault file's bytes (for before/after comparisons).
    func vaultBytes(_ path: String? = nil) -> Data {
        (try? Data(contentsOf: URL(fileURLWithPath: path ?? vaultPath))) ?? Data()
    }
}

/// posix_spawn with files for stdin/stdout/stderr/fd 3 (no pipe deadlocks).
enum Spawn {
    static func run(_ exe: String, _ args: [String], stdin: String?, fd3: String?, environment: [String: String], workDir: String) -> CLIResult {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-spawn-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let inPath = tmp.appendingPathComponent("in").path
        let outPath = tmp.appendingPathComponent("out").path
        let errPath = tmp.appendingPathComponent("err").path
        let fd3Path = tmp.appendingPathComponent("fd3").path
        FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))
        if let fd3 { FileManager.default.createFile(atPath: fd3Path, contents: Data(fd3.utf8)) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if fd3 != nil { posix_spawn_file_actions_addopen(&actions, 3, fd3Path, O_RDONLY, 0) }
        // Relative paths in tests resolve against the sandbox root: commands
        // are run through env -C (glibc lacks a portable addchdir).

        let argv = (["/usr/bin/env", "-C", workDir, exe] + args).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, envp)
        precondition(rc == 0, "posix_spawn failed: \(rc)")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return CLIResult(status: code, stdout: out, stderr: err)
    }
}
