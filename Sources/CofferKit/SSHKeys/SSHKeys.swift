import CofferCrypto
import Foundation

/// SSH keys kept as `ssh-key` items (docs/ssh.md): importing a key file,
/// generating a key, and reading the keys the SSH agent serves.
package struct SSHKeys: VaultComponent {
    package let core: VaultCore

    /// The key of the `ssh-key` item `name`.
    package func key(named name: String) throws(CofferError) -> SSHVaultKey {
        let item = try items.item(named: name)
        return try SSHKeyItem.key(of: item)
    }

    /// Every live `ssh-key` item under `prefix` ("" for all), sorted by
    /// name, with the items that could not be read (a damaged or hand-edited
    /// private key) listed apart so an agent can report them and go on.
    package func agentKeys(prefix: String) throws(CofferError) -> (keys: [SSHVaultKey], unreadable: [String]) {
        var keys: [SSHVaultKey] = []
        var unreadable: [String] = []
        for summary in try items.list() where summary.type == .sshKey && summary.name.hasPrefix(prefix) {
            let item: Item
            do { item = try items.item(named: "id:" + summary.id.hex) } catch  where error.kind == .itemNotFound { continue }
            do { keys.append(try SSHKeyItem.key(of: item)) } catch { unreadable.append(item.name) }
        }
        return (keys.sorted { $0.itemName < $1.itemName }, unreadable)
    }

    /// Stores `key` as a new `ssh-key` item.
    package func add(_ key: SSHPrivateKey, name: String, confirm: Bool, tags: [String], policy: SyncPolicy) throws(CofferError) -> Item {
        try items.add(SSHKeyItem.draft(key, name: name, confirm: confirm, tags: tags, policy: policy))
    }
}

/// A key served by the agent: the vault item it comes from and its options.
public struct SSHVaultKey: Sendable {
    /// The item's name.
    public let itemName: String
    public let key: SSHPrivateKey
    /// Ask before each signature (the item's `confirm` field says yes).
    public let confirm: Bool
    /// The SHA-256 fingerprints (`SHA256:…`) of the host keys this key may
    /// sign for (the item's `hosts` field); empty: any use.
    public let hosts: [String]
}

/// How an `ssh-key` item holds a key: `private-key` (the unencrypted
/// OpenSSH private key file, secret), `public-key` (`authorized_keys`
/// form), `comment`, and the optional `confirm` (yes/no) and `hosts`
/// (host key fingerprints, separated by commas or spaces).
public enum SSHKeyItem {
    public static let privateKeyField = "private-key"
    public static let publicKeyField = "public-key"
    public static let commentField = "comment"
    public static let confirmField = "confirm"
    public static let hostsField = "hosts"
    /// The largest key file read (an RSA 16384-bit key is about 13 KB).
    public static let maxFileSize = 64 * 1024

    /// The fields of an item holding `key`.
    public static func fields(_ key: SSHPrivateKey, confirm: Bool) -> [Field] {
        var fields = [
            Field(name: privateKeyField, value: key.openSSHPEM(), isSecret: true),
            Field(name: publicKeyField, value: key.authorizedKey, isSecret: false),
            Field(name: commentField, value: key.comment, isSecret: false),
        ]
        if confirm { fields.append(Field(name: confirmField, value: "yes", isSecret: false)) }
        return fields
    }

    /// A new item holding `key`; an empty comment becomes the item's name.
    public static func draft(_ key: SSHPrivateKey, name: String, confirm: Bool, tags: [String] = [], policy: SyncPolicy = .sync) -> ItemDraft {
        let k = key.comment.isEmpty ? key.with(comment: name) : key
        return ItemDraft(name: name, type: .sshKey, fields: fields(k, confirm: confirm), tags: tags, policy: policy)
    }

    /// Reads a private key file's bytes (OpenSSH, or PEM for ECDSA and
    /// RSA). An encrypted key is ``CofferError/Kind/badData`` with the
    /// remedy to decrypt it first (``SSHKeyFile/decrypt(_:passphrase:)``).
    public static func readPrivateKey(_ bytes: [UInt8]) throws(CofferError) -> SSHPrivateKey {
        do {
            return try SSHPrivateKey.parse(bytes)
        } catch {
            throw translate(error)
        }
    }

    static func translate(_ error: SSHKeyError) -> CofferError {
        switch error {
        case .encrypted:
            return CofferError(.badData, "the SSH key is encrypted with a passphrase", hint: "give the key's passphrase to decrypt it while importing")
        case .unsupported(let why):
            return CofferError(.badData, "unsupported SSH key: \(why)", hint: "Coffer takes Ed25519, ECDSA P-256/P-384 and RSA keys of 2048 bits or more")
        case .malformed(let why):
            return CofferError(.badData, "not a readable SSH private key: \(why)", hint: "give an OpenSSH private key file (as ssh-keygen writes) or a PEM key")
        case .cannotSign(let why):
            return CofferError(.badData, "cannot sign: \(why)")
        }
    }

    /// The key held by `item`, an `ssh-key` item.
    public static func key(of item: Item) throws(CofferError) -> SSHVaultKey {
        guard item.type == .sshKey else {
            throw CofferError(.usage, "'\(item.name)' is a \(item.type.rawValue) item, not an ssh-key item")
        }
        guard let field = item.field(privateKeyField) else {
            throw CofferError(.badData, "'\(item.name)' has no \(privateKeyField) field")
        }
        var key: SSHPrivateKey
        do { key = try SSHPrivateKey.parse(field.bytes) } catch {
            throw CofferError(.badData, "the private key of '\(item.name)' cannot be read: \(translate(error).message)")
        }
        if let comment = item.field(commentField)?.value, comment != key.comment { key = key.with(comment: comment) }
        if key.comment.isEmpty { key = key.with(comment: item.name) }
        let confirm = item.field(confirmField).map { ["yes", "true", "1", "on"].contains($0.value.lowercased()) } ?? false
        let hosts = (item.field(hostsField)?.value ?? "").split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
        return SSHVaultKey(itemName: item.name, key: key, confirm: confirm, hosts: hosts)
    }
}
