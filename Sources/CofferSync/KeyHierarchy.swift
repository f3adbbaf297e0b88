import CofferCrypto

/// The key hierarchy of docs/key-hierarchy.md, in one place so the vault,
/// the bundle reader and the spec agree.
///
/// ```
/// passphrase ──Argon2id(salt, m, t, p)──▶ KEK (32 bytes)
/// KEK ──XChaCha20-Poly1305 unwrap(AD = wrapAD)──▶ master key (32 random bytes)
/// master ──crypto_kdf(id, "coffer01")──▶ item key (1), name-index key (2),
///                                        field-id key (3), bundle key (4),
///                                        item-record key (16), vault-MAC key (17),
///                                        listing-cache key (24)
/// ```
public enum KeyHierarchy {
    public enum SubKeyID: UInt64, Sendable {
        case itemPayload = 1
        case nameIndex = 2
        case fieldID = 3
        case bundle = 4
        /// Seals the per-item integrity records of a vault file (format 2).
        case itemRecord = 16
        /// Keys the vault-wide MAC of a vault file (format 2).
        case vaultMAC = 17
        /// Keys the key check of a rekeyed vault (format 5): tells a
        /// session's master key of an older epoch from the current one.
        case keyCheck = 18
        /// Seals a shell session's listing cache (never stored in a vault
        /// file or a bundle).
        case listingCache = 24
    }

    /// `BLAKE2b-256(key = subkey(18), "coffer-key-check-v1" || vault id ||
    /// epoch)`: stored with the vault's key epoch, recomputed from a
    /// session's master key before it is used (docs/key-hierarchy.md).
    public static func keyCheck(master: SecretBytes, vault: VaultID, epoch: KeyEpoch) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.bytes(Array("coffer-key-check-v1".utf8))
        w.id(vault)
        w.bytes(epoch.encoded)
        return KeyedHash.hash(w.data, key: subKey(.keyCheck, of: master), length: 32)
    }

    /// Associated data of the wrapped master key: binds it to the vault
    /// id and the exact KDF parameters and salt, and from the first rekey
    /// on to the key epoch (`coffer-wrap-v2`), so the wrapped key of one
    /// epoch cannot be presented as another's.
    public static func wrapAssociatedData(vault: VaultID, kdf: KDFParameters, salt: [UInt8], epoch: KeyEpoch = .initial) -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        w.bytes(Array((epoch.isInitial ? "coffer-wrap-v1" : "coffer-wrap-v2").utf8))
        w.id(vault)
        if !epoch.isInitial { w.bytes(epoch.encoded) }
        w.u32(kdf.memoryKiB)
        w.u32(kdf.iterations)
        w.u32(kdf.parallelism)
        w.bytes(salt)
        return w.data
    }

    /// Unwraps the master key with a passphrase. Throws
    /// ``CryptoError/authenticationFailed`` for a wrong passphrase.
    ///
    /// Passphrases are UTF-8 in Unicode NFC (docs/key-hierarchy.md): the
    /// NFC form is tried first. A passphrase that is not valid UTF-8, or
    /// whose NFC form fails, is also tried byte for byte, so a vault made
    /// before normalization (or with a non-UTF-8 passphrase) still opens.
    public static func unwrapMasterKey(
        passphrase: SecretBytes, vault: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], epoch: KeyEpoch = .initial
    ) throws(CryptoError) -> SecretBytes {
        if let nfc = passphrase.nfcNormalizedUTF8() {
            do {
                return try unwrapExactly(passphrase: nfc, vault: vault, kdf: kdf, salt: salt, wrapped: wrapped, epoch: epoch)
            } catch .authenticationFailed where nfc !== passphrase {
                // An older vault may have been made with these exact bytes.
            }
        }
        return try unwrapExactly(passphrase: passphrase, vault: vault, kdf: kdf, salt: salt, wrapped: wrapped, epoch: epoch)
    }

    static func unwrapExactly(
        passphrase: SecretBytes, vault: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], epoch: KeyEpoch
    ) throws(CryptoError) -> SecretBytes {
        let kek = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf)
        let master = try AEAD.openSecret(
            wrapped, key: kek, associatedData: wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epoch))
        guard master.count == 32 else { throw .authenticationFailed }
        return master
    }

    /// Wraps `master` under a passphrase with fresh salt. The passphrase
    /// must be valid UTF-8; its NFC form is used, so "café" typed with a
    /// precomposed é or with e + combining accent opens the vault.
    public static func wrapMasterKey(
        _ master: SecretBytes, passphrase raw: SecretBytes, vault: VaultID, kdf: KDFParameters, epoch: KeyEpoch = .initial
    ) throws(CryptoError) -> (salt: [UInt8], wrapped: [UInt8]) {
        guard let passphrase = raw.nfcNormalizedUTF8() else {
            throw .malformedInput("the passphrase is not valid UTF-8 text")
        }
        let salt = Random.bytes(Argon2id.saltLength)
        let kek = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf)
        let wrapped = AEAD.sealSecret(master, key: kek, associatedData: wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epoch))
        return (salt, wrapped)
    }

    public static func subKey(_ id: SubKeyID, of master: SecretBytes) -> SecretBytes {
        SubKey.derive(from: master, id: id.rawValue)
    }

    /// The register id of a user field: `BLAKE2b-128(key = field-id key,
    /// item id || UTF-8 name)`.
    public static func registerID(field: String, item: ItemID, fieldIDKey: SecretBytes) -> RegisterID {
        RegisterID(bytes: KeyedHash.hash(item.bytes + Array(field.utf8), key: fieldIDKey, length: 16))!
    }

    /// The name-index hash: `BLAKE2b-256(key = name-index key, UTF-8 NFC name)`.
    public static func nameHash(_ name: String, nameKey: SecretBytes) -> [UInt8] {
        KeyedHash.hash(Array(name.utf8), key: nameKey, length: 32)
    }
}
