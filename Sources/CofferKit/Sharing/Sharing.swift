import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

/// Shared vaults (docs/sharing.md): member identities, and the vault's
/// members. The façade's forwarders are in Sharing/Vault+Sharing.swift.
package struct Sharing: VaultComponent {
    package let core: VaultCore
}

/// A member identity: a name, and the key pairs (docs/sharing.md,
/// "Identities"). The public half is ``publicKey``'s text, `coffer1…`.
public struct MemberIdentity: Sendable {
    /// The name the identity was made with (a label: members are named by
    /// whoever adds them).
    public var name: String
    /// The secret keys, in guarded memory.
    public var secretKey: MemberSecretKey
    /// The public identity.
    public var publicKey: MemberPublicKey { secretKey.publicKey }

    public init(name: String, secretKey: MemberSecretKey) {
        self.name = name
        self.secretKey = secretKey
    }

    /// A new identity from the system's random generator.
    public static func generate(name: String) throws(CofferError) -> MemberIdentity {
        try checkName(name)
        return MemberIdentity(name: name, secretKey: .generate())
    }

    /// The longest member or identity name.
    public static let maxNameLength = 64

    /// A member or identity name: 1 to 64 ASCII letters, digits, `.`, `_`,
    /// `-` or `@`, not starting with `-` (so it never reads as an option).
    public static func checkName(_ name: String) throws(CofferError) {
        let ok =
            !name.isEmpty && name.utf8.count <= maxNameLength && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-@".unicodeScalars.contains($0)) }
        guard ok else {
            throw CofferError(
                .usage, "invalid member name '\(name.prefix(80))': use 1 to \(maxNameLength) letters, digits, '.', '_', '-' or '@'",
                remedy: .init(.nameMember, "give a name such as alice or ci-deploy"))
        }
    }

    /// The default name of a new identity: the login name, else `member`.
    public static var defaultName: String {
        let user = ProcessInfo.processInfo.environment["USER"] ?? ""
        return (try? checkName(user)) != nil ? user : "member"
    }

    /// A public identity from its text (`coffer1…`), or a data error
    /// (exit 65) saying what is wrong with it.
    public static func publicKey(from text: String, what: String = "the public identity") throws(CofferError) -> MemberPublicKey {
        do { return try MemberPublicKey(text: text) } catch {
            throw CofferError(
                .badData, "\(what) '\(text.prefix(24))\(text.count > 24 ? "…" : "")' is not valid: \(error)",
                remedy: .init(.checkPublicIdentity, "copy the whole coffer1… line that the member's identity creation printed"))
        }
    }
}

extension CofferError.Remedy.Action {
    /// Give a valid member name.
    public static let nameMember = Self(rawValue: "nameMember")
    /// Check the public identity (`coffer1…`) given.
    public static let checkPublicIdentity = Self(rawValue: "checkPublicIdentity")
    /// Make a member identity first.
    public static let createIdentity = Self(rawValue: "createIdentity")
    /// The vault holds an identity already: keep it, or make another in a file.
    public static let keepIdentity = Self(rawValue: "keepIdentity")
    /// The bundle's key is not sealed to the identity: ask a member to add it.
    public static let askToBeAdded = Self(rawValue: "askToBeAdded")
    /// This file does not open with the identity given.
    public static let unlockWithClonedIdentity = Self(rawValue: "unlockWithClonedIdentity")
    /// Write the identity file elsewhere.
    public static let chooseAnotherIdentityPath = Self(rawValue: "chooseAnotherIdentityPath")
}

// MARK: The vault's own identity

extension Sharing {
    /// The reserved item holding this vault's member identity: a `custom`
    /// item, `local-only` (it never enters a bundle), with the fields
    /// `name`, `public` and `secret` (the `coffer-secret1…` text, a secret
    /// field). docs/sharing.md, "Identities".
    static let identityItemName = ".coffer/identity"
    static let nameField = "name"
    static let publicField = "public"
    static let secretField = "secret"

    /// This vault's member identity, or nil when it holds none.
    package func identity() throws(CofferError) -> MemberIdentity? {
        let item: Item
        do { item = try items.item(named: Sharing.identityItemName) } catch  where error.kind == .itemNotFound {
            // A member replica opened with its identity file keeps none.
            return try core.unlockedIdentity.load()
        }
        guard let secret = item.field(Sharing.secretField)?.value else {
            throw CofferError(.badData, "the vault's identity item \(Sharing.identityItemName) has no secret key field")
        }
        var bytes = Array(secret.utf8)
        let key: MemberSecretKey
        do { key = try MemberSecretKey(text: SecretBytes(consuming: &bytes)) } catch {
            throw CofferError(.badData, "the vault's identity item \(Sharing.identityItemName) is damaged: \(error)")
        }
        let name = item.field(Sharing.nameField)?.value ?? MemberIdentity.defaultName
        return MemberIdentity(name: name, secretKey: key)
    }

    /// Makes a new identity and stores its secret half in this vault (a
    /// local-only reserved item). Refuses (``CofferError/Kind/duplicateName``)
    /// when the vault holds one: replacing it would lock this member out of
    /// every vault that seals its key to the old one.
    package func createIdentity(name: String) throws(CofferError) -> MemberIdentity {
        let identity = try MemberIdentity.generate(name: name)
        if let held = try self.identity() {
            throw CofferError(
                .duplicateName, "this vault already holds the identity '\(held.name)' (\(held.publicKey.text))",
                remedy: .init(.keepIdentity, "keep using it; to make a separate identity, write it to a file instead"))
        }
        let secret = identity.secretKey.secretText()
        let text = String(decoding: secret.revealedBytes(), as: UTF8.self)
        let draft = ItemDraft(
            name: Sharing.identityItemName, type: .custom,
            fields: [
                Field(name: Sharing.nameField, value: identity.name, isSecret: false),
                Field(name: Sharing.publicField, value: identity.publicKey.text, isSecret: false),
                Field(name: Sharing.secretField, value: text, isSecret: true),
            ], policy: .localOnly)
        _ = try items.add([draft], allowReserved: true)
        return identity
    }
}

// MARK: Identity files

/// An identity file (`coffer identity new --out FILE`, `coffer clone
/// --identity FILE`): UTF-8 text, mode 0600; lines starting with `#` are
/// comments (`# name: N` gives the name), blank lines are ignored, and
/// exactly one other line holds the secret identity, `coffer-secret1…`
/// (docs/sharing.md, "Identity files").
public enum MemberIdentityFile {
    /// The largest identity file read.
    public static let maxSize = 64 * 1024

    /// The file's text for `identity`.
    static func contents(_ identity: MemberIdentity) -> SecretBytes {
        let secret = identity.secretKey.secretText()
        var text = Array(
            """
            # coffer member identity (docs/sharing.md): keep this file secret
            # name: \(identity.name)
            # public: \(identity.publicKey.text)

            """.utf8)
        text += secret.revealedBytes()
        text.append(0x0a)
        return SecretBytes(consuming: &text)
    }

    /// Writes `identity` to a new file at `path` (mode 0600; never
    /// replaces a file).
    public static func write(_ identity: MemberIdentity, to path: String) throws(CofferError) {
        var bytes = contents(identity).revealedBytes()
        defer { bytes.wipe() }
        do { try PrivateFile.create(path: path, bytes: bytes) } catch {
            if FileManager.default.fileExists(atPath: path) {
                throw CofferError(
                    .cannotCreate, "a file already exists at \(path)",
                    remedy: .init(.chooseAnotherIdentityPath, "choose another path; an identity file is never overwritten", path: path))
            }
            throw CofferError(
                .cannotCreate, "cannot write the identity file \(path): \(error)", remedy: .init(.chooseAnotherIdentityPath, "choose another path", path: path))
        }
    }

    /// Reads the identity in the file at `path`.
    public static func read(path: String) throws(CofferError) -> MemberIdentity {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw CofferError(.fileNotFound, "no identity file at \(path)", remedy: .init(.createIdentity, "make an identity file first"))
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw CofferError(.badData, "\(path) is not a regular file, so not an identity file") }
        guard st.st_size <= maxSize else { throw CofferError(.badData, "\(path) is larger than 64 KiB, so not an identity file") }
        let raw: SecretBytes
        do { raw = try SecretInput.read(path: path) } catch {
            throw CofferError(.fileNotFound, "cannot read the identity file \(path)")
        }
        return try parse(raw, path: path)
    }

    /// Reads the identity in the file at `path` to unlock or clone a
    /// vault with (`--identity FILE`, `$COFFER_IDENTITY_FILE`): a file that
    /// other users may read or write (any group or other permission bit) is
    /// refused (exit 77), as ssh refuses such a private key.
    public static func readPrivate(path: String) throws(CofferError) -> MemberIdentity {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw CofferError(
                .fileNotFound, "no identity file at \(path)",
                remedy: .init(.createIdentity, "give the identity file written when the identity was made", path: path))
        }
        let mode = st.st_mode & 0o7777
        if (st.st_mode & S_IFMT) == S_IFREG, mode & 0o077 != 0 {
            throw CofferError(
                .permissionDenied, "the identity file \(path) is open to other users (mode \(String(mode, radix: 8, uppercase: false))); it must be mode 0600",
                hint: "run `chmod 600 \(path)`, and if others could have read it, have a member replace this identity")
        }
        return try read(path: path)
    }

    /// Parses an identity file's bytes.
    static func parse(_ raw: SecretBytes, path: String) throws(CofferError) -> MemberIdentity {
        do {
            let (name, key) = try MemberSecretKey.parseIdentityFile(raw)
            let valid = name.flatMap { (try? MemberIdentity.checkName($0)) != nil ? $0 : nil }
            return MemberIdentity(name: valid ?? MemberIdentity.defaultName, secretKey: key)
        } catch {
            switch error {
            case .notUTF8: throw CofferError(.badData, "\(path) is not an identity file (not UTF-8 text)")
            case .noIdentity: throw CofferError(.badData, "\(path) holds no identity", hint: "an identity file has one coffer-secret1… line")
            case .moreThanOne(let line):
                throw CofferError(.badData, "\(path) holds more than one identity (line \(line))", hint: "keep one coffer-secret1… line")
            case .invalid(let why):
                throw CofferError(.badData, "\(path) is not a valid identity file: \(why)", hint: "use the identity file as it was written, whole")
            }
        }
    }
}
