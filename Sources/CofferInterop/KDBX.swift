import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// A KeePass database file, read by running the installed
/// `keepassxc-cli export --format xml` with its output in a pipe (no
/// plaintext on disk) and the database password written to its standard
/// input (never argv, never a file); the XML is then read as
/// ``KeePassXML`` (docs/import-export.md#kdbx).
public enum KDBX {
    public static func read(path: String, password: SecretBytes, keyFile: String? = nil, program: String = "keepassxc-cli") throws(CofferError) -> ImportedFile
    {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else {
            throw CofferError(.fileNotFound, "no KeePass database at \(path)", hint: "check the path")
        }
        var args = [program, "export", "--format", "xml"]
        if let keyFile { args += ["--key-file", keyFile] }
        args += ["--", path]
        // keepassxc-cli reads the password as one line from standard input.
        var bytes = password.revealedBytes()
        bytes.append(UInt8(ascii: "\n"))
        let line = SecretBytes(consuming: &bytes)
        var env = ProcessInfo.processInfo.environment
        // No X display: keepassxc-cli must not try to reach a GUI.
        env["QT_QPA_PLATFORM"] = "offscreen"
        let result: CapturedOutput
        do {
            result = try ChildProcess.capture(args, environment: env.map { "\($0.key)=\($0.value)" }, input: line)
        } catch .notFound {
            throw CofferError(
                .fileNotFound, "--from kdbx needs keepassxc-cli (KeePassXC), which is not installed",
                hint: "install KeePassXC (Debian: apt install keepassxc), or export the database to XML in KeePass and use --from keepass-xml")
        } catch {
            throw CofferError(.internalError, "cannot start keepassxc-cli: \(error)")
        }
        guard result.termination.exitCode == 0 else {
            let stderr = String(decoding: result.stderr, as: UTF8.self)
            let said =
                stderr.split(separator: "\n").map { $0.replacingOccurrences(of: "Enter password to unlock \(path): ", with: "") }
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("Enter password") }.first
                ?? "exit status \(result.termination.status)"
            if stderr.localizedCaseInsensitiveContains("invalid credentials") || stderr.localizedCaseInsensitiveContains("wrong key") {
                throw CofferError(
                    .wrongPassphrase, "the password does not open \(path)",
                    hint: "give the database's password with --source-passphrase-fd N, --source-passphrase-file F, or at the prompt")
            }
            throw CofferError(
                .badData, "keepassxc-cli cannot read \(path): \(said)",
                hint: "check that `keepassxc-cli export --format xml \(path)` works; nothing was imported")
        }
        return try KeePassXML.read(Data(result.stdout), file: path)
    }
}
