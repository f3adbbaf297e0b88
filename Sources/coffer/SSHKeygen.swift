import ArgumentParser
import CofferKit
import CofferSystem
import Foundation

/// `coffer ssh-keygen NAME`: a new SSH key made in the vault.
struct SSHKeygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-keygen",
        abstract: "Generate an SSH key in the vault and print its public key.",
        discussion: """
            Makes a key pair that never exists in a file: the private key is stored as an ssh-key \
            item and served by `coffer ssh-agent`; the public key (authorized_keys form) is printed \
            on stdout. Ed25519 by default; --type ecdsa (--bits 256 or 384) or rsa (--bits 2048, \
            3072 or 4096; default 3072). See `coffer help ssh`.
              coffer ssh-keygen ssh/github > ~/.ssh/github.pub
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, a path such as ssh/github.")
    var name: String

    @Option(help: "Key type: ed25519, ecdsa or rsa.")
    var type: String = "ed25519"

    @Option(help: "Key size: 256 or 384 for ecdsa; 2048, 3072 or 4096 for rsa.")
    var bits: Int?

    @Option(help: "The key's comment (default: the item name).")
    var comment: String?

    @Flag(help: "Ask before each signature the agent makes with this key (SSH_ASKPASS).")
    var confirm = false

    @Option(name: .customLong("tag"), help: "Add a tag (repeatable).")
    var tags: [String] = []

    @Flag(help: "Keep this key on this machine: it never enters a bundle.")
    var localOnly = false

    func run() throws {
        let keyType = try SSHKeygen.keyType(type, bits: bits)
        _ = try Vault.normalizeName(name)
        let vault = try options.unlockForWriting()
        if try vault.contains(name) {
            throw CofferError(
                .duplicateName, "an item named '\(try Vault.normalizeName(name))' already exists", hint: "choose another name, or remove it with `coffer rm`")
        }
        let key: SSHPrivateKey
        do {
            key = try SSHPrivateKey.generate(keyType, bits: keyType == .rsa ? bits : nil, comment: comment ?? (try Vault.normalizeName(name)))
        } catch {
            throw CofferError(.usage, "\(error)", hint: "see `coffer ssh-keygen --help` for the types and sizes")
        }
        let item = try vault.addSSHKey(key, name: name, confirm: confirm, tags: tags, policy: localOnly ? .localOnly : .sync)
        Output.note("generated \(item.name) (ssh-key, \(key.type.displayName) \(key.bits) bits, \(key.fingerprint))")
        Output.out(key.authorizedKey)
    }

    /// The algorithm `--type` and `--bits` name.
    static func keyType(_ type: String, bits: Int?) throws(CofferError) -> SSHKeyType {
        switch type.lowercased() {
        case "ed25519", "ssh-ed25519":
            if let bits, bits != 256 { throw CofferError(.usage, "--bits does not apply to ed25519 keys", hint: "omit --bits") }
            return .ed25519
        case "ecdsa":
            switch bits ?? 256 {
            case 256: return .ecdsaP256
            case 384: return .ecdsaP384
            default: throw CofferError(.usage, "--bits \(bits ?? 0) is not an ecdsa size", hint: "use --bits 256 or --bits 384")
            }
        case "rsa":
            if let bits, ![2048, 3072, 4096].contains(bits) {
                throw CofferError(.usage, "--bits \(bits) is not an rsa size Coffer makes", hint: "use --bits 2048, 3072 or 4096")
            }
            return .rsa
        default:
            throw CofferError(.usage, "unknown key type '\(type)'", hint: "use --type ed25519, ecdsa or rsa")
        }
    }
}

/// `coffer add NAME --type ssh-key`: importing a private key file.
enum SSHKeyImport {
    /// Reads the key (from `--from-file`, or stdin when it is not a
    /// terminal), decrypts it when it is encrypted (the passphrase from
    /// `--key-passphrase-fd` or a no-echo prompt), and stores it.
    static func add(_ r: Add.Request, passphraseOnStdin: Bool, unlockForWriting: () throws(CofferError) -> Vault) throws(CofferError) {
        if r.generate || !r.generateField.isEmpty || r.totpUri != nil || r.source != nil || r.url != nil || !r.secrets.isEmpty {
            throw CofferError(
                .usage, "--generate, --generate-field, --totp-uri, --source, --url and --secret do not apply to ssh-key items",
                hint: "import a key with --from-file PATH, or make one with `coffer ssh-keygen NAME`")
        }
        var extra = try ItemInput.parseAssignments(r.fields, type: .sshKey)
        for f in extra where [SSHKeyItem.privateKeyField, SSHKeyItem.publicKeyField].contains(f.name) {
            throw CofferError(.usage, "--field \(f.name)=… cannot be set by hand", hint: "the key file gives the private and public key")
        }
        _ = try Vault.normalizeName(r.name)
        var bytes = try readKeyBytes(r, passphraseOnStdin: passphraseOnStdin)
        defer { bytes.wipe() }
        var key: SSHPrivateKey
        if SSHKeyFile.isEncrypted(bytes) {
            let passphrase = try keyPassphrase(r, stdinUsed: passphraseOnStdin || r.fromFile == nil)
            key = try SSHKeyFile.decrypt(bytes, passphrase: passphrase)
        } else {
            key = try SSHKeyItem.readPrivateKey(bytes)
        }
        if let c = extra.first(where: { $0.name == SSHKeyItem.commentField }) {
            key = key.with(comment: c.value)
            extra.removeAll { $0.name == SSHKeyItem.commentField }
        }
        var draft = SSHKeyItem.draft(key, name: r.name, confirm: false, tags: r.tags, policy: r.localOnly ? .localOnly : .sync)
        if let expires = r.expires {
            guard let day = Day.parseExpiry(expires) else {
                throw CofferError(.usage, "invalid --expires '\(expires)'", hint: "use YYYY-MM-DD or a span such as 30d, 6w, 3m, 1y")
            }
            draft.expires = day
        }
        draft.fields += extra
        let vault = try unlockForWriting()
        if try vault.contains(r.name) {
            throw CofferError(
                .duplicateName, "an item named '\(try Vault.normalizeName(r.name))' already exists",
                hint: "choose another name, or change it with `coffer edit`")
        }
        let item = try vault.add(draft)
        Output.note("added \(item.name) (ssh-key, \(key.type.displayName) \(key.bits) bits, \(key.fingerprint))")
    }

    static func readKeyBytes(_ r: Add.Request, passphraseOnStdin: Bool) throws(CofferError) -> [UInt8] {
        if let path = r.fromFile {
            var st = stat()
            guard stat(path, &st) == 0 else {
                throw CofferError(.fileNotFound, "no key file at \(path)", hint: "give the private key's path, e.g. ~/.ssh/id_ed25519")
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw CofferError(.usage, "\(path) is not a regular file", hint: "give the private key file's path, e.g. ~/.ssh/id_ed25519")
            }
            guard Int(st.st_size) <= SSHKeyItem.maxFileSize else {
                throw CofferError(.badData, "\(path) is too large for an SSH private key (\(st.st_size) bytes)", hint: "give the private key file")
            }
            do {
                let fd = try SecretInputFile.open(path)
                defer { close(fd) }
                return try SecretInput.read(fd: fd).revealedBytes()
            } catch let e as SecretInputError {
                throw PassphraseSource.translate(e)
            } catch let e as CofferError {
                throw e
            } catch {
                throw CofferError(.ioError, "cannot read \(path): \(error)")
            }
        }
        guard !Output.stdinIsTerminal else {
            throw CofferError(
                .usage, "an ssh-key item needs a key file", hint: "give it with --from-file ~/.ssh/id_ed25519, or make a key with `coffer ssh-keygen NAME`")
        }
        guard !passphraseOnStdin else {
            throw CofferError(.usage, "the key and the vault passphrase cannot both come from standard input", hint: "give the key with --from-file PATH")
        }
        do { return try SecretInput.read(fd: 0).revealedBytes() } catch { throw PassphraseSource.translate(error) }
    }

    static func keyPassphrase(_ r: Add.Request, stdinUsed: Bool) throws(CofferError) -> SecretBytes {
        do {
            if let fd = r.keyPassphraseFd { return try SecretInput.read(fd: fd) }
            guard Output.stdinIsTerminal || !stdinUsed else {
                throw CofferError(
                    .usage, "the SSH key is encrypted and there is no terminal to ask its passphrase on",
                    hint: "give the key's passphrase with --key-passphrase-fd N")
            }
            if !Output.stdinIsTerminal { return try SecretInput.read(fd: 0) }
            return try SecretInput.prompt("Passphrase for the SSH key: ")
        } catch let e as SecretInputError {
            throw PassphraseSource.translate(e)
        } catch let e as CofferError {
            throw e
        } catch {
            throw CofferError(.internalError, "\(error)")
        }
    }
}

/// Opening a key file (already checked to be a regular file) for reading.
enum SecretInputFile {
    static func open(_ path: String) throws(CofferError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            throw CofferError(
                code == EACCES ? .permissionDenied : .ioError, "cannot read \(path): \(String(cString: strerror(code)))")
        }
        return fd
    }
}
