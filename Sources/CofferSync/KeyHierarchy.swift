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
///                                        listing-cache key (24), integrity-stamp key (25)
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
        /// Authenticates a session's integrity stamp (the vault file state
        /// whose vault MAC was last verified; never stored in a vault file
        /// or a bundle).
        case integrityStamp = 25
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

    /// What the associated data of a wrapped master key binds besides the
    /// vault id, KDF parameters and salt (docs/key-hierarchy.md, "Wrapping
    /// the master key").
    public enum WrapBinding: Sendable, Equatable {
        /// `coffer-wrap-v1` (epoch 0) or `coffer-wrap-v2` (a later epoch):
        /// every wrapping made before vault format 7 and bundle format 4.
        case legacy
        /// `coffer-wrap-v3`: the key of a vault that has integrity data
        /// (vault format 7 on). A file whose key opens under this binding
        /// and that claims an older format, or has no integrity data, was
        /// set back by hand: it is never re-upgraded.
        case integrity
    }

    /// Associated data of the wrapped master key: binds it to the vault
    /// id and the exact KDF parameters and salt; from the first rekey on
    /// to the key epoch (`coffer-wrap-v2`), so the wrapped key of one
    /// epoch cannot be presented as another's; and from vault format 7 on
    /// (`coffer-wrap-v3`, always with the epoch) to "this vault has
    /// integrity data", so the key itself says that the vault once had it.
    public static func wrapAssociatedData(
        vault: VaultID, kdf: KDFParameters, salt: [UInt8], epoch: KeyEpoch = .initial, binding: WrapBinding = .legacy
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        switch binding {
        case .legacy:
            w.bytes(Array((epoch.isInitial ? "coffer-wrap-v1" : "coffer-wrap-v2").utf8))
            w.id(vault)
            if !epoch.isInitial { w.bytes(epoch.encoded) }
        case .integrity:
            w.bytes(Array("coffer-wrap-v3".utf8))
            w.id(vault)
            w.bytes(epoch.encoded)
        }
        w.u32(kdf.memoryKiB)
        w.u32(kdf.iterations)
        w.u32(kdf.parallelism)
        w.bytes(salt)
        return w.data
    }

    /// A master key opened with a passphrase, the binding its wrapping was
    /// made with, and the KEK that opened it (to re-wrap it under the
    /// other binding with the same salt, without a second Argon2id run).
    public struct Unwrapped: Sendable {
        public let master: SecretBytes
        public let binding: WrapBinding
        public let kek: SecretBytes
    }

    /// Unwraps the master key with a passphrase. Throws
    /// ``CryptoError/authenticationFailed`` for a wrong passphrase.
    ///
    /// Passphrases are UTF-8 in Unicode NFC (docs/key-hierarchy.md): the
    /// NFC form is tried first. A passphrase that is not valid UTF-8, or
    /// whose NFC form fails, is also tried byte for byte, so a vault made
    /// before normalization (or with a non-UTF-8 passphrase) still opens.
    public static func unwrapMasterKey(
        passphrase: SecretBytes, vault: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], epoch: KeyEpoch = .initial,
        binding: WrapBinding = .legacy
    ) throws(CryptoError) -> SecretBytes {
        try unwrapMasterKey(
            passphrase: passphrase, vault: vault, kdf: kdf, salt: salt, wrapped: wrapped, epoch: epoch, bindings: [binding]
        ).master
    }

    /// The same, trying each of `bindings` in order under one KEK per
    /// passphrase form (one Argon2id run, not one per binding): a vault
    /// file tries the binding its format says first, then the other, and
    /// the caller learns which one the key was really wrapped with.
    public static func unwrapMasterKey(
        passphrase: SecretBytes, vault: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], epoch: KeyEpoch,
        bindings: [WrapBinding]
    ) throws(CryptoError) -> Unwrapped {
        if let nfc = passphrase.nfcNormalizedUTF8() {
            do {
                return try unwrapExactly(passphrase: nfc, vault: vault, kdf: kdf, salt: salt, wrapped: wrapped, epoch: epoch, bindings: bindings)
            } catch .authenticationFailed where nfc !== passphrase {
                // An older vault may have been made with these exact bytes.
            }
        }
        return try unwrapExactly(passphrase: passphrase, vault: vault, kdf: kdf, salt: salt, wrapped: wrapped, epoch: epoch, bindings: bindings)
    }

    static func unwrapExactly(
        passphrase: SecretBytes, vault: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], epoch: KeyEpoch,
        bindings: [WrapBinding]
    ) throws(CryptoError) -> Unwrapped {
        let kek = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf)
        for binding in bindings {
            let ad = wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epoch, binding: binding)
            guard let master = try? AEAD.openSecret(wrapped, key: kek, associatedData: ad), master.count == 32 else { continue }
            return Unwrapped(master: master, binding: binding, kek: kek)
        }
        throw .authenticationFailed
    }

    /// Wraps `master` under a passphrase with fresh salt. The passphrase
    /// must be valid UTF-8; its NFC form is used, so "café" typed with a
    /// precomposed é or with e + combining accent opens the vault.
    public static func wrapMasterKey(
        _ master: SecretBytes, passphrase raw: SecretBytes, vault: VaultID, kdf: KDFParameters, epoch: KeyEpoch = .initial,
        binding: WrapBinding = .integrity
    ) throws(CryptoError) -> (salt: [UInt8], wrapped: [UInt8]) {
        guard let passphrase = raw.nfcNormalizedUTF8() else {
            throw .malformedInput("the passphrase is not valid UTF-8 text")
        }
        let salt = Random.bytes(Argon2id.saltLength)
        let kek = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf)
        let wrapped = AEAD.sealSecret(master, key: kek, associatedData: wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epoch, binding: binding))
        return (salt, wrapped)
    }

    /// Wraps `master` again under the KEK that opened it (same salt and
    /// parameters, a fresh nonce) with `binding`: the one-time upgrade of
    /// a legacy wrapping to ``WrapBinding/integrity``.
    public static func rewrapMasterKey(
        _ unwrapped: Unwrapped, vault: VaultID, kdf: KDFParameters, salt: [UInt8], epoch: KeyEpoch, binding: WrapBinding
    ) -> [UInt8] {
        AEAD.sealSecret(
            unwrapped.master, key: unwrapped.kek,
            associatedData: wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epoch, binding: binding))
    }

    /// The clear part of a sealed key's plaintext (docs/bundle-format.md
    /// §Format 5): `"coffer-seal-v1" || vault id (16) || key epoch (32)`,
    /// 62 bytes; the master key follows it.
    public static func sealPrefix(vault: VaultID, epoch: KeyEpoch) -> [UInt8] {
        Array("coffer-seal-v1".utf8) + vault.bytes + epoch.encoded
    }

    /// The length of ``sealPrefix(vault:epoch:)``.
    public static let sealPrefixLength = 62

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
