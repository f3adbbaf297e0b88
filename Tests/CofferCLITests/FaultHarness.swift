import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

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
        return Spawn.timed(CofferBinary.path, argv, environment: env, workDir: root.path, stdin: stdin, timeout: timeout)
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
        return Spawn.timed("/bin/sh", ["-c", script], environment: env, workDir: root.path, timeout: timeout)
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
