internal import CSodium

/// XChaCha20-Poly1305 (IETF construction) through libsodium. A box is
/// `nonce (24 bytes) || ciphertext || tag (16 bytes)`, the nonce random.
public enum AEAD {
    public static let keyLength = 32
    public static let nonceLength = 24
    public static let tagLength = 16
    /// Bytes a box adds to its plaintext.
    public static let overhead = nonceLength + tagLength

    /// Encrypts `plaintext` under `key`, binding `associatedData`.
    public static func seal(_ plaintext: some Collection<UInt8>, key: SecretBytes, associatedData: [UInt8]) -> [UInt8] {
        let nonce = Random.bytes(nonceLength)
        return seal(Array(plaintext), nonce: nonce, key: key, associatedData: associatedData)
    }

    /// Encrypts with a caller-chosen nonce. Only for deterministic test
    /// vectors; a nonce must never repeat under one key.
    package static func seal(_ plaintext: [UInt8], nonce: [UInt8], key: SecretBytes, associatedData: [UInt8]) -> [UInt8] {
        precondition(nonce.count == nonceLength)
        return seal(plaintext, key: key, associatedData: associatedData) { out in
            nonce.withUnsafeBufferPointer { out.update(from: $0.baseAddress!, count: nonceLength) }
        }
    }

    /// The box: `writeNonce` puts the nonce at the start of the output,
    /// then the plaintext is encrypted under it after the nonce.
    static func seal(
        _ plaintext: [UInt8], key: SecretBytes, associatedData: [UInt8], writeNonce: (UnsafeMutablePointer<UInt8>) -> Void
    ) -> [UInt8] {
        precondition(key.count == keyLength)
        var out = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        // Always 0 in libsodium: a plaintext above its limit (2^64 − 17
        // bytes) aborts inside libsodium (sodium_misuse) rather than failing.
        let rc = out.withUnsafeMutableBufferPointer { o in
            writeNonce(o.baseAddress!)
            return plaintext.withUnsafeBufferPointer { m in
                associatedData.withUnsafeBufferPointer { ad in
                    key.withBytes { k in
                        var clen: UInt64 = 0
                        return crypto_aead_xchacha20poly1305_ietf_encrypt(
                            o.baseAddress! + nonceLength, &clen,
                            m.baseAddress, UInt64(m.count),
                            ad.baseAddress, UInt64(ad.count), nil,
                            o.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        Sodium.mustSucceed(rc, "crypto_aead_xchacha20poly1305_ietf_encrypt")
        return out
    }

    /// Decrypts a box made by ``seal(_:key:associatedData:)``.
    public static func open(_ box: some Collection<UInt8>, key: SecretBytes, associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        let box = Array(box)
        guard box.count >= overhead, key.count == keyLength else { throw .authenticationFailed }
        var out = [UInt8](repeating: 0, count: box.count - overhead)
        let rc = out.withUnsafeMutableBufferPointer { m in
            box.withUnsafeBufferPointer { b in
                associatedData.withUnsafeBufferPointer { ad in
                    key.withBytes { k in
                        var mlen: UInt64 = 0
                        return crypto_aead_xchacha20poly1305_ietf_decrypt(
                            m.baseAddress, &mlen, nil,
                            b.baseAddress! + nonceLength, UInt64(b.count - nonceLength),
                            ad.baseAddress, UInt64(ad.count),
                            b.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return out
    }

    /// Encrypts a secret (a key being wrapped) without copying it out of
    /// guarded memory.
    public static func sealSecret(_ secret: SecretBytes, key: SecretBytes, associatedData: [UInt8]) -> [UInt8] {
        sealSecret(secret, nonce: Random.bytes(nonceLength), key: key, associatedData: associatedData)
    }

    /// Deterministic-nonce variant for test vectors only.
    package static func sealSecret(_ secret: SecretBytes, nonce: [UInt8], key: SecretBytes, associatedData: [UInt8]) -> [UInt8] {
        precondition(key.count == keyLength && nonce.count == nonceLength)
        var out = [UInt8](repeating: 0, count: nonceLength + secret.count + tagLength)
        out.replaceSubrange(0..<nonceLength, with: nonce)
        // Always 0 in libsodium, as in seal above.
        let rc = out.withUnsafeMutableBufferPointer { o in
            associatedData.withUnsafeBufferPointer { ad in
                secret.withBytes { m in
                    key.withBytes { k in
                        var clen: UInt64 = 0
                        return crypto_aead_xchacha20poly1305_ietf_encrypt(
                            o.baseAddress! + nonceLength, &clen,
                            m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                            ad.baseAddress, UInt64(ad.count), nil,
                            o.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        Sodium.mustSucceed(rc, "crypto_aead_xchacha20poly1305_ietf_encrypt")
        return out
    }

    /// Decrypts a wrapped secret straight into guarded memory.
    public static func openSecret(_ box: [UInt8], key: SecretBytes, associatedData: [UInt8]) throws(CryptoError) -> SecretBytes {
        guard box.count >= overhead, key.count == keyLength else { throw .authenticationFailed }
        var rc: Int32 = -1
        let secret = SecretBytes(count: box.count - overhead) { m in
            box.withUnsafeBufferPointer { b in
                associatedData.withUnsafeBufferPointer { ad in
                    key.withBytes { k in
                        var mlen: UInt64 = 0
                        rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
                            m.baseAddress?.assumingMemoryBound(to: UInt8.self), &mlen, nil,
                            b.baseAddress! + nonceLength, UInt64(b.count - nonceLength),
                            ad.baseAddress, UInt64(ad.count),
                            b.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return secret
    }
}
