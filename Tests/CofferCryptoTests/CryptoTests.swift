import CofferCrypto
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
private func secret(_ s: String) -> SecretBytes { SecretBytes(copying: Array(s.utf8)) }

@Suite("Argon2id")
struct Argon2idTests {
    /// Known answers from the reference implementation's test suite
    /// (phc-winner-argon2 src/test.c, Argon2id v1.3), also reproduced with
    /// Debian's `argon2` command.
    @Test(arguments: [
        (UInt32(2), UInt32(65536), "09316115d5cf24ed5a15a31a3ba326e5cf32edc24702987c02b6566f61913cf7"),
        (UInt32(1), UInt32(1024), "c8e9aedc956f6a7dff0a4d42940df628623f328ea1235005abac933c57093e23"),
    ])
    func knownAnswers(iterations: UInt32, memoryKiB: UInt32, expected: String) throws {
        let key = try Argon2id.deriveKey(
            passphrase: secret("password"), salt: Array("somesalt".utf8),
            parameters: KDFParameters(memoryKiB: memoryKiB, iterations: iterations, parallelism: 1))
        #expect(hex(key.revealedBytes()) == expected)
    }

    @Test func rejectsImpossibleParameters() {
        #expect(throws: CryptoError.self) {
            try KDFParameters(memoryKiB: 8, iterations: 1, parallelism: 4).validate()
        }
        #expect(throws: CryptoError.self) {
            try KDFParameters(memoryKiB: 8192, iterations: 0, parallelism: 1).validate()
        }
        #expect(KDFParameters(memoryKiB: 8192, iterations: 1, parallelism: 1).isWeak)
        #expect(!KDFParameters.default.isWeak)
    }
}

@Suite("XChaCha20-Poly1305")
struct AEADTests {
    let key = SecretBytes.random(count: 32)

    @Test(arguments: [0, 1, 15, 16, 17, 1000, 65536])
    func roundTrip(size: Int) throws {
        let plain = Random.bytes(size)
        let box = AEAD.seal(plain, key: key, associatedData: [1, 2, 3])
        #expect(box.count == size + AEAD.overhead)
        #expect(try AEAD.open(box, key: key, associatedData: [1, 2, 3]) == plain)
    }

    @Test func everyBitFlipIsDetected() {
        let box = AEAD.seal(Array("api key".utf8), key: key, associatedData: [])
        for i in 0..<(box.count * 8) {
            var bad = box
            bad[i / 8] ^= UInt8(1 << (i % 8))
            #expect(throws: CryptoError.authenticationFailed) { try AEAD.open(bad, key: key, associatedData: []) }
        }
    }

    @Test func associatedDataAndKeyAreBound() {
        let box = AEAD.seal(Array("x".utf8), key: key, associatedData: [1])
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.open(box, key: key, associatedData: [2]) }
        #expect(throws: CryptoError.authenticationFailed) {
            try AEAD.open(box, key: SecretBytes.random(count: 32), associatedData: [1])
        }
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.open(box.prefix(10), key: key, associatedData: [1]) }
    }

    @Test func wrapsSecretsWithoutLeavingGuardedMemory() throws {
        let master = SecretBytes.random(count: 32)
        let box = AEAD.sealSecret(master, key: key, associatedData: [9])
        let back = try AEAD.openSecret(box, key: key, associatedData: [9])
        #expect(back.constantTimeEquals(master))
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.openSecret(box, key: key, associatedData: [8]) }
    }

    @Test func aWipedKeyReadsZerosAndOpensNothingItSealed() {
        let k = SecretBytes.random(count: 32)
        let box = AEAD.seal(Array("api key".utf8), key: k, associatedData: [])
        k.wipe()
        #expect(k.revealedBytes() == [UInt8](repeating: 0, count: 32))
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.open(box, key: k, associatedData: []) }
        k.wipe() // idempotent
        #expect(k.count == 32)
        SecretBytes(copying: [UInt8]()).wipe() // an empty buffer too
    }

    @Test func noncesAreFresh() {
        let a = AEAD.seal([1], key: key, associatedData: [])
        let b = AEAD.seal([1], key: key, associatedData: [])
        #expect(a != b)
    }
}

@Suite("Sub-keys and keyed hashes")
struct KeyDerivationTests {
    @Test func subKeysAreDeterministicAndDistinct() {
        let master = SecretBytes.random(count: 32)
        let a1 = SubKey.derive(from: master, id: 1)
        let a2 = SubKey.derive(from: master, id: 1)
        let b = SubKey.derive(from: master, id: 2)
        #expect(a1.constantTimeEquals(a2))
        #expect(!a1.constantTimeEquals(b))
        #expect(!a1.constantTimeEquals(master))
    }

    /// crypto_kdf_derive_from_key is BLAKE2b-256(key = master, salt = id as
    /// 8 little-endian bytes + 8 zero bytes, personal = context + 8 zero
    /// bytes, message = empty). Expected value computed independently with
    /// Python's hashlib.blake2b; it pins the context string "coffer01".
    @Test func subKeyKnownAnswer() {
        let master = SecretBytes(copying: Array(0..<32) as [UInt8])
        let k = SubKey.derive(from: master, id: 1)
        #expect(hex(k.revealedBytes()) == "63b599f4a32e97915cbb53a7d61c32bef29eea7f8a3521a825820b24fe1b10fe")
    }

    @Test func keyedHashDependsOnKey() {
        let k1 = SecretBytes.random(count: 32)
        let k2 = SecretBytes.random(count: 32)
        let m = Array("work/openai".utf8)
        #expect(KeyedHash.hash(m, key: k1) == KeyedHash.hash(m, key: k1))
        #expect(KeyedHash.hash(m, key: k1) != KeyedHash.hash(m, key: k2))
        #expect(KeyedHash.hash(m, key: k1, length: 16).count == 16)
    }

    /// BLAKE2b-256("abc"), RFC 7693 appendix uses BLAKE2b-512; this is the
    /// published 256-bit digest of "abc".
    @Test func unkeyedDigestKnownAnswer() {
        #expect(hex(KeyedHash.digest(Array("abc".utf8))) == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
    }
}

@Suite("secretstream")
struct SecretStreamTests {
    @Test func roundTripAndTruncation() throws {
        let key = SecretBytes.random(count: 32)
        let w = SecretStream.Writer(key: key)
        let c1 = w.push([1, 2, 3], associatedData: [7])
        let c2 = w.push([4], tag: .final)
        let r = try SecretStream.Reader(key: key, header: w.header)
        let m1 = try r.pull(c1, associatedData: [7])
        #expect(m1.message == [1, 2, 3] && m1.tag == .message)
        #expect(!r.finished)
        let m2 = try r.pull(c2)
        #expect(m2.message == [4] && m2.tag == .final && r.finished)

        // Reordering and dropping are detected.
        let r2 = try SecretStream.Reader(key: key, header: w.header)
        #expect(throws: CryptoError.self) { try r2.pull(c2) }
        // Wrong associated data.
        let r3 = try SecretStream.Reader(key: key, header: w.header)
        #expect(throws: CryptoError.self) { try r3.pull(c1, associatedData: [8]) }
    }
}

@Suite("prepared keyed hash")
struct PreparedKeyedHashTests {
    /// The prepared form (key block absorbed once) gives exactly libsodium's
    /// one-shot keyed BLAKE2b, for every message length around the block size.
    @Test func matchesTheOneShotKeyedHash() {
        let key = SecretBytes.random(count: 32)
        let prepared = PreparedKeyedHash(key: key, length: 32)
        for n in [0, 1, 63, 64, 127, 128, 129, 300] {
            let m = Random.bytes(n)
            #expect(prepared.hash(m) == KeyedHash.hash(m, key: key, length: 32))
        }
        #expect(prepared.hash([1]) != PreparedKeyedHash(key: SecretBytes.random(count: 32)).hash([1]))
    }
}

@Suite("AEAD batch sealer")
struct AEADBatchSealerTests {
    /// Every box of a batch opens like one from `AEAD.seal`, binds its
    /// associated data, and carries its own nonce — also across the
    /// refills of the nonce buffer (200 boxes, 64 nonces per draw).
    @Test func boxesOpenAndNoNonceRepeats() throws {
        let key = SecretBytes(copying: Random.bytes(AEAD.keyLength))
        let sealer = AEAD.BatchSealer(key: key)
        var nonces = Set<[UInt8]>()
        for i in 0..<200 {
            let plain = Array("record \(i)".utf8) + [UInt8](repeating: UInt8(i % 256), count: i)
            let ad = Array("item \(i)".utf8)
            let box = sealer.seal(plain, associatedData: ad)
            #expect(box.count == plain.count + AEAD.overhead)
            #expect(try AEAD.open(box, key: key, associatedData: ad) == plain)
            #expect(throws: CryptoError.self) { try AEAD.open(box, key: key, associatedData: Array("item x".utf8)) }
            nonces.insert(Array(box.prefix(AEAD.nonceLength)))
        }
        #expect(nonces.count == 200)
        #expect(!nonces.contains([UInt8](repeating: 0, count: AEAD.nonceLength)))
    }
}
