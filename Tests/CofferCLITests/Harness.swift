import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throw-away HOME with its own XDG folders and vault, and helpers to run
/// `coffer` against it. Each test gets its own.
final class TestHome: @unchecked Sendable {
    /// Removed with everything in it when the home goes away.
    private let folder = TemporaryDirectory()
    var root: URL { folder.url }
    var passphrase = "correct horse battery staple"
    /// Environment for every run (HOME, XDG_* in the sandbox, nothing
    /// inherited that could point at a real vault).
    var environment: [String: String]

    init() {
        let base = folder.url
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
        let r = unlocked(["init"] + FastKDF.arguments)
        precondition(r.status == 0, "init failed: \(r)")
    }

    /// The vault file's bytes (for before/after comparisons).
    func vaultBytes(_ path: String? = nil) -> Data {
        (try? Data(contentsOf: URL(fileURLWithPath: path ?? vaultPath))) ?? Data()
    }
}

extension TestHome {
    /// Runs any program in the sandbox's environment (plus `env`).
    static func spawn(_ home: TestHome, _ exe: String, _ args: [String], env extra: [String: String] = [:]) -> CLIResult {
        var env = home.environment
        for (k, v) in extra { env[k] = v }
        return Spawn.run(exe, args, stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
    }
}
