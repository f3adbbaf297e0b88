import CofferCrypto
import Foundation
import Testing

/// The Secret Service's `dh-ietf1024-sha256-aes128-cbc-pkcs7` session
/// (docs/secret-service.md): known answers for the group, HKDF and
/// AES-128-CBC, agreement from both sides, and refusals of bad input.
@Suite("Secret Service session cryptography")
struct SecretServiceDHTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    /// The Oakley group 2 prime, big-endian.
    static let prime = bytes(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")

    @Test func exponentOneGivesTheGeneratorAndTheKeyIsHKDFOfThePaddedSecret() throws {
        // x = 1: our public key is g = 2, and the shared secret is the
        // client's y itself (5), left-padded to 128 bytes; HKDF-SHA-256
        // with no salt and empty info of that, 16 bytes (computed with
        // Python's hmac, RFC 5869).
        let a = try SecretServiceDH.agree(clientPublic: [5], exponent: SecretBytes(copying: [1]))
        #expect(a.publicKey == [2])
        #expect(Self.hex(a.key.revealedBytes()) == "53320521b4dd9a4afd86641bebe7026d")
    }

    @Test func bothSidesAgree() throws {
        let x = SecretBytes.random(count: 128)
        let y = SecretBytes.random(count: 128)
        let gx = try SecretServiceDH.agree(clientPublic: [3], exponent: x).publicKey
        let gy = try SecretServiceDH.agree(clientPublic: [3], exponent: y).publicKey
        #expect(gx.count <= 128 && gx.count > 100)
        let k1 = try SecretServiceDH.agree(clientPublic: gy, exponent: x).key
        let k2 = try SecretServiceDH.agree(clientPublic: gx, exponent: y).key
        #expect(k1.constantTimeEquals(k2))
        #expect(k1.count == 16)
        let other = try SecretServiceDH.agree(clientPublic: gy, exponent: SecretBytes.random(count: 128)).key
        #expect(!other.constantTimeEquals(k1))
    }

    @Test func publicKeysOutsideTheGroupOrOfTheWrongLengthAreRefused() {
        var pMinusOne = Self.prime
        pMinusOne[127] -= 1
        for bad in [[], [0], [1], Array(repeating: UInt8(1), count: 129), pMinusOne, Self.prime] as [[UInt8]] {
            #expect(throws: CryptoError.self, "\(bad.count) bytes") { try SecretServiceDH.agree(clientPublic: bad) }
        }
        // 128 bytes below p - 1 are fine.
        var below = pMinusOne
        below[127] -= 1
        #expect(throws: Never.self) { try SecretServiceDH.agree(clientPublic: below) }
    }

    @Test func aesCBCKnownAnswerAndPKCS7() throws {
        // NIST SP 800-38A, F.2.1 (CBC-AES128.Encrypt), first block; with
        // PKCS #7 a 16-byte plaintext takes a second, all-padding block.
        let key = SecretBytes(copying: Self.bytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let iv = Self.bytes("000102030405060708090a0b0c0d0e0f")
        let sealed = try SecretServiceDH.encrypt(Self.bytes("6bc1bee22e409f96e93d7e117393172a"), key: key, iv: iv)
        #expect(sealed.ciphertext.count == 32)
        #expect(Self.hex(Array(sealed.ciphertext.prefix(16))) == "7649abac8119b246cee98e9b12e9197d")
        #expect(try SecretServiceDH.decrypt(sealed.ciphertext, iv: iv, key: key) == Self.bytes("6bc1bee22e409f96e93d7e117393172a"))
    }

    @Test func roundTripsAndRefusesBadIVPaddingAndLength() throws {
        let key = SecretBytes.random(count: 16)
        for length in [0, 1, 15, 16, 17, 1000] {
            let plain = Array(repeating: UInt8(length % 251), count: length)
            let sealed = try SecretServiceDH.encrypt(plain, key: key)
            #expect(sealed.iv.count == 16)
            #expect(sealed.ciphertext.count == (length / 16 + 1) * 16)
            #expect(try SecretServiceDH.decrypt(sealed.ciphertext, iv: sealed.iv, key: key) == plain)
        }
        let sealed = try SecretServiceDH.encrypt(Array("hunter2".utf8), key: key)
        #expect(throws: CryptoError.self) { try SecretServiceDH.decrypt(sealed.ciphertext, iv: Array(sealed.iv.prefix(8)), key: key) }
        #expect(throws: CryptoError.self) { try SecretServiceDH.decrypt(Array(sealed.ciphertext.prefix(15)), iv: sealed.iv, key: key) }
        #expect(throws: CryptoError.self) { try SecretServiceDH.decrypt([], iv: sealed.iv, key: key) }
        // Another key: the padding check fails (or, rarely, it happens to
        // be valid padding, but never the plaintext).
        let wrong = SecretBytes.random(count: 16)
        let attempt = try? SecretServiceDH.decrypt(sealed.ciphertext, iv: sealed.iv, key: wrong)
        #expect(attempt != Array("hunter2".utf8))
    }
}
