internal import CGMP
internal import CSodium
import Crypto
import _CryptoExtras

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// GMP's public names (mpz_init, mpz_powm_sec…) are macros for __gmpz_…
// functions, which Swift cannot import; the functions are called directly.

/// The Secret Service's encrypted session,
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` (the specification's "Transfer of
/// Secrets", as libsecret and gnome-keyring implement it): Diffie-Hellman
/// over the 1024-bit MODP group of RFC 2409 (Oakley group 2, generator 2),
/// the shared secret left-padded to 128 bytes, HKDF-SHA-256 of it with no
/// salt and empty info to a 16-byte key, and AES-128-CBC with PKCS #7
/// padding and a random 16-byte IV per secret.
///
/// libsodium has neither finite-field Diffie-Hellman nor AES-CBC, so: the
/// modular exponentiation is GMP's `mpz_powm_sec` (constant time in the
/// exponent; GMP's memory is wiped when it frees it), HKDF and AES-CBC are
/// swift-crypto's (`Crypto`, `_CryptoExtras`). docs/secret-service.md.
public enum SecretServiceDH {
    public static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// RFC 2409 §6.2, the second Oakley group: 2^1024 - 2^960 - 1 + 2^64 * (floor(2^894 pi) + 129093).
    static let primeHex =
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF"
    static let primeBytes = 128

    /// An agreed session: the public key to send back and the AES key.
    public struct Agreement {
        public let publicKey: [UInt8]
        public let key: SecretBytes
    }

    /// Agrees on a key with a client whose public key is `clientPublic`
    /// (big-endian, at most 128 bytes, 1 < y < p - 1): a fresh private
    /// exponent (1024 random bits from libsodium, in guarded memory),
    /// our public key g^x mod p, the shared y^x mod p, and the AES key.
    public static func agree(clientPublic: [UInt8]) throws(CryptoError) -> Agreement {
        try agree(clientPublic: clientPublic, exponent: SecretBytes.random(count: primeBytes))
    }

    /// ``agree(clientPublic:)`` with a chosen private exponent (big-endian),
    /// for the tests.
    package static func agree(clientPublic: [UInt8], exponent: SecretBytes) throws(CryptoError) -> Agreement {
        guard !clientPublic.isEmpty, clientPublic.count <= primeBytes else {
            throw .malformedInput("the peer's public key is \(clientPublic.count) bytes; 1 to \(primeBytes) expected")
        }
        GMPMemory.install()
        var p = __mpz_struct()
        var y = __mpz_struct()
        var x = __mpz_struct()
        var r = __mpz_struct()
        var g = __mpz_struct()
        __gmpz_init(&p)
        __gmpz_init(&y)
        __gmpz_init(&x)
        __gmpz_init(&r)
        __gmpz_init_set_ui(&g, 2)
        defer {
            __gmpz_clear(&p)
            __gmpz_clear(&y)
            __gmpz_clear(&x)
            __gmpz_clear(&r)
            __gmpz_clear(&g)
        }
        _ = primeHex.withCString { __gmpz_set_str(&p, $0, 16) }
        clientPublic.withUnsafeBytes { __gmpz_import(&y, $0.count, 1, 1, 1, 0, $0.baseAddress) }
        // 1 < y < p - 1: 0, 1 and p - 1 would give a secret anyone knows.
        var pMinusOne = __mpz_struct()
        __gmpz_init(&pMinusOne)
        defer { __gmpz_clear(&pMinusOne) }
        __gmpz_sub_ui(&pMinusOne, &p, 1)
        guard __gmpz_cmp_ui(&y, 1) > 0, __gmpz_cmp(&y, &pMinusOne) < 0 else {
            throw .malformedInput("the peer's public key is not in the group (1 < y < p - 1)")
        }
        exponent.withBytes { __gmpz_import(&x, $0.count, 1, 1, 1, 0, $0.baseAddress) }
        __gmpz_powm_sec(&r, &g, &x, &p)
        let ours = export(&r, padded: false)
        __gmpz_powm_sec(&r, &y, &x, &p)
        var shared = export(&r, padded: true)
        defer { sodium_memzero(&shared, shared.count) }
        let ikm = SymmetricKey(data: shared)
        let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, outputByteCount: 16)
        let key = derived.withUnsafeBytes { SecretBytes(copying: $0) }
        return Agreement(publicKey: ours, key: key)
    }

    /// Big-endian bytes of `n`: as short as the number (a public key, as
    /// libsecret sends them), or left-padded to 128 (the shared secret).
    private static func export(_ n: UnsafePointer<__mpz_struct>, padded: Bool) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: primeBytes)
        var written = 0
        out.withUnsafeMutableBytes { _ = __gmpz_export($0.baseAddress, &written, 1, 1, 1, 0, n) }
        if padded {
            if written < primeBytes {
                let value = Array(out[0..<written])
                out = [UInt8](repeating: 0, count: primeBytes - written) + value
            }
            return out
        }
        return Array(out[0..<written])
    }

    /// `plaintext` under `key`: a fresh random IV and the AES-128-CBC
    /// ciphertext with PKCS #7 padding.
    public static func encrypt(_ plaintext: [UInt8], key: SecretBytes) throws(CryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        try encrypt(plaintext, key: key, iv: Random.bytes(16))
    }

    /// ``encrypt(_:key:)`` with a chosen IV, for the known-answer tests.
    package static func encrypt(_ plaintext: [UInt8], key: SecretBytes, iv: [UInt8]) throws(CryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        do {
            let k = key.withBytes { SymmetricKey(data: $0) }
            let c = try AES._CBC.encrypt(plaintext, using: k, iv: try AES._CBC.IV(ivBytes: iv))
            return (iv, Array(c))
        } catch {
            throw .unavailable("AES-CBC failed")
        }
    }

    /// The plaintext of `ciphertext` (whole 16-byte blocks, PKCS #7) under
    /// `key` and the 16-byte `iv`. A wrong IV length, a ciphertext that is
    /// not whole blocks or bad padding: ``CryptoError/malformedInput(_:)``.
    public static func decrypt(_ ciphertext: [UInt8], iv: [UInt8], key: SecretBytes) throws(CryptoError) -> [UInt8] {
        guard iv.count == 16 else { throw .malformedInput("the IV is \(iv.count) bytes; 16 expected") }
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw .malformedInput("the ciphertext is \(ciphertext.count) bytes; a positive multiple of 16 expected")
        }
        do {
            let k = key.withBytes { SymmetricKey(data: $0) }
            return Array(try AES._CBC.decrypt(ciphertext, using: k, iv: try AES._CBC.IV(ivBytes: iv)))
        } catch {
            throw .malformedInput("the secret does not decrypt (wrong key, IV or padding)")
        }
    }
}

/// GMP allocates through these, so the limbs that held a private
/// exponent or a shared secret are wiped before they go back to malloc.
enum GMPMemory {
    private static let installed: Void = {
        __gmp_set_memory_functions(
            { size in malloc(size) },
            { old, oldSize, newSize in
                guard let fresh = malloc(newSize) else { return nil }
                if let old {
                    memcpy(fresh, old, min(oldSize, newSize))
                    sodium_memzero(old, oldSize)
                    free(old)
                }
                return fresh
            },
            { p, size in
                if let p {
                    sodium_memzero(p, size)
                    free(p)
                }
            })
    }()

    static func install() { _ = installed }
}
