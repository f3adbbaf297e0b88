import CofferCrypto
import CofferSync
import CofferSystem
import Foundation

/// The member identity of a shell session opened with one
/// (`coffer unlock --identity FILE`, docs/sessions.md "Member identities"):
/// kept beside the session file as `<session id>.identity` (mode 0600,
/// removed with the session), sealed under a key that exists only in the
/// session token, so that the session's commands sign what they publish
/// and adopt a key rotation through the identity's sealed box, as the
/// identity file itself would:
/// ```
/// magic "CFSIDN01" | session id (16) | vault id (16) | name (u16 length + UTF-8)
/// | box = XChaCha20-Poly1305(secret identity text `coffer-secret1…`,
///         key = BLAKE2b-256(key = token secret, "coffer-session-identity-v1" || session id),
///         AD = every byte before the box)
/// ```
/// Neither the token nor the file alone gives the identity; the file is
/// read only when a command needs the identity (never by `get`).
enum SessionIdentity {
    static let magic = Array("CFSIDN01".utf8)
    static let keyLabel = Array("coffer-session-identity-v1".utf8)
    static let suffix = ".identity"
    static let maxFileSize = 4096

    static func key(secret: SecretBytes, id: [UInt8]) -> SecretBytes {
        KeyedHash.deriveKey(from: secret, label: keyLabel + id)
    }

    static func header(id: [UInt8], vaultID: VaultID, name: String) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + name.utf8.count)
        w.bytes(magic)
        w.bytes(id)
        w.bytes(vaultID.bytes)
        w.blob16(Array(name.utf8.prefix(MemberIdentity.maxNameLength)))
        return w.data
    }

    /// Writes the identity file of the session `id` (a new file, 0600).
    static func write(_ identity: MemberIdentity, id: [UInt8], secret: SecretBytes, vaultID: VaultID, directory: SessionDirectory) throws(CofferError) {
        let ad = header(id: id, vaultID: vaultID, name: identity.name)
        let box = AEAD.sealSecret(identity.secretKey.secretText(), key: key(secret: secret, id: id), associatedData: ad)
        let path = directory.path + "/" + Hex.encode(id) + suffix
        PrivateFile.removeIfPresent(path: path)
        do { try PrivateFile.create(path: path, bytes: ad + box) } catch {
            throw CofferError(.cannotCreate, "cannot create the session file \(path): \(error)")
        }
    }

    /// The identity of the session `id`: nil when the session was opened
    /// without one (no file); an unusable-session error (exit 77, unlock
    /// again) when the file is not a private file of the user, is damaged,
    /// altered, or of another session or vault.
    static func read(id: [UInt8], secret: SecretBytes, vaultID: VaultID, directory: SessionDirectory) throws(CofferError) -> MemberIdentity? {
        let path = directory.path + "/" + Hex.encode(id) + suffix
        let stored: [UInt8]
        do {
            guard let r = try PrivateFile.read(path: path, maxSize: maxFileSize) else { return nil }
            stored = r.bytes
        } catch .notPrivate {
            throw damaged("its identity file \(path) is not a private file of this user")
        } catch {
            throw damaged("cannot read its identity file: \(error)")
        }
        var reader = ByteReader(stored)
        guard (try? reader.bytes(magic.count)) == magic, (try? reader.bytes(16)) == id, (try? reader.bytes(16)) == vaultID.bytes,
            let nameBytes = try? reader.blob16(), let name = String(validating: nameBytes, as: UTF8.self),
            let box = try? reader.bytes(reader.remaining)
        else { throw damaged("its identity file is damaged") }
        let ad = Array(stored.prefix(stored.count - box.count))
        guard let text = try? AEAD.openSecret(box, key: key(secret: secret, id: id), associatedData: ad),
            let secretKey = try? MemberSecretKey(text: text)
        else { throw damaged("its identity file was altered") }
        return MemberIdentity(name: name, secretKey: secretKey)
    }

    static func damaged(_ why: String) -> CofferError {
        CofferError(.locked, "session invalid (\(why))", remedy: Session.unlockAgainRemedy)
    }
}
