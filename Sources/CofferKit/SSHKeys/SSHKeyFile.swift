import CofferCrypto
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Encrypted OpenSSH keys. They are encrypted with bcrypt-pbkdf and
/// AES-256-CTR; neither libsodium nor swift-crypto has bcrypt-pbkdf, and
/// Coffer writes no primitive of its own, so OpenSSH's own `ssh-keygen`
/// decrypts them (docs/ssh.md, "Encrypted keys"): a copy of the file goes
/// into a fresh 0700 folder on a memory file system (tmpfs: the user's
/// runtime folder or /dev/shm), `ssh-keygen -p -N '' -f COPY` rewrites the
/// copy without a passphrase, reading the old passphrase from a pipe (never
/// argv, never a file), Coffer reads the result and the copy is
/// overwritten and removed. The decrypted key never reaches a disk.
public enum SSHKeyFile {
    /// Whether `bytes` is an OpenSSH or PEM key encrypted with a passphrase.
    public static func isEncrypted(_ bytes: [UInt8]) -> Bool {
        do {
            _ = try SSHPrivateKey.parse(bytes)
            return false
        } catch {
            return error == .encrypted
        }
    }

    /// A folder on a memory file system this user owns, or nil.
    static func memoryFolder(environment: [String: String]) -> String? {
        var candidates: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { candidates.append(runtime) }
        candidates.append("/dev/shm")
        for dir in candidates {
            guard Disk.isMemoryFileSystem(dir), access(dir, W_OK | X_OK) == 0 else { continue }
            return dir
        }
        return nil
    }

    /// Decrypts the encrypted key file `bytes` with `passphrase`, through
    /// `ssh-keygen` (see the type's documentation).
    /// - Throws: ``CofferError/Kind/wrongPassphrase`` when ssh-keygen says
    ///   the passphrase is wrong, ``CofferError/Kind/badData`` when the
    ///   key cannot be read, ``CofferError/Kind/unavailable`` when there is
    ///   no ssh-keygen, ``CofferError/Kind/internalError`` when there is no
    ///   memory file system to work in.
    public static func decrypt(_ bytes: [UInt8], passphrase: SecretBytes, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(CofferError) -> SSHPrivateKey
    {
        guard let base = memoryFolder(environment: environment) else {
            throw CofferError(
                .internalError, "no memory file system (tmpfs) to decrypt the SSH key in without writing it to a disk",
                hint: "decrypt a copy yourself with ssh-keygen -p, import the copy, and remove it")
        }
        var template = Array((base + "/coffer-sshkey-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CofferError(.cannotCreate, "cannot create a private folder in \(base): \(String(cString: strerror(errno)))")
        }
        let dir = String(cString: made)
        let file = dir + "/key"
        defer {
            PrivateFile.wipeAndRemove(path: file, maxSize: SSHKeyItem.maxFileSize * 2)
            rmdir(dir)
        }
        // OpenSSH needs the final line's newline, which a key read from a
        // descriptor (SecretInput strips one) may have lost.
        var copy = bytes
        if copy.last != 0x0a { copy.append(0x0a) }
        defer { copy.wipe() }
        do { try PrivateFile.create(path: file, bytes: copy) } catch {
            throw CofferError(.cannotCreate, "cannot write the key's copy in \(dir): \(error)")
        }
        var line = passphrase.revealedBytes() + [0x0a]
        let input = SecretBytes(consuming: &line)
        // No DISPLAY or SSH_ASKPASS: ssh-keygen must read the pipe, not
        // open a window; no terminal is involved either (RPP_STDIN).
        let env = ["PATH=" + (environment["PATH"] ?? "/usr/bin:/bin"), "LC_ALL=C"]
        let out: CapturedOutput
        do {
            out = try ChildProcess.capture(["ssh-keygen", "-q", "-p", "-N", "", "-f", file], environment: env, input: input)
        } catch .notFound {
            throw CofferError(
                .unavailable, "ssh-keygen is not installed; it is needed to decrypt an encrypted SSH key",
                hint: "install OpenSSH's client (Debian: openssh-client), or decrypt a copy yourself with ssh-keygen -p")
        } catch {
            throw CofferError(.internalError, "cannot run ssh-keygen: \(error)")
        }
        guard out.termination.exitCode == 0 else {
            let said = String(decoding: out.stderr, as: UTF8.self)
            if said.contains("incorrect passphrase") || said.contains("passphrase") {
                throw CofferError(.wrongPassphrase, "wrong passphrase for the SSH key", hint: "give the passphrase the key was encrypted with")
            }
            let last = said.split(separator: "\n").last.map(String.init) ?? "exit \(out.termination.status)"
            throw CofferError(.badData, "ssh-keygen could not decrypt the SSH key: \(last.prefix(200))")
        }
        let read: (bytes: [UInt8], modifiedMillis: Int64)?
        do { read = try PrivateFile.read(path: file, maxSize: SSHKeyItem.maxFileSize * 2) } catch {
            throw CofferError(.ioError, "cannot read the decrypted copy: \(error)")
        }
        guard var decrypted = read?.bytes else { throw CofferError(.ioError, "ssh-keygen left no decrypted copy") }
        defer { decrypted.wipe() }
        return try SSHKeyItem.readPrivateKey(decrypted)
    }
}
