import CofferCrypto
import Foundation
import Testing

private func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
private func secret(_ s: String) -> SecretBytes { SecretBytes(copying: Array(s.utf8)) }

/// docs/sharing.md, "Identity encoding": Bech32m (BIP 350) as age uses it.
@Suite("Bech32m")
struct Bech32mTests {
    /// BIP 350's valid vector whose data is a whole number of bytes (the
    /// 5-bit values 31 down to 0), and its empty-data vectors.
    @Test func bip350ValidVectors() throws {
        var fives: [UInt8] = []
        for v in (0...31).reversed() { fives.append(UInt8(v)) }
        // 32 five-bit values = 20 bytes.
        var bytes: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for v in fives {
            acc = (acc << 5) | UInt32(v)
            bits += 5
            while bits >= 8 {
                bits -= 8
                bytes.append(UInt8((acc >> UInt32(bits)) & 0xff))
            }
        }
        #expect(Bech32m.encode(prefix: "abcdef", bytes: bytes) == "abcdef1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx")
        #expect(try Bech32m.decode(Array("abcdef1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx".utf8), prefix: "abcdef") == bytes)
        #expect(try Bech32m.decode(Array("a1lqfn3a".utf8), prefix: "a") == [])
        #expect(try Bech32m.decode(Array("A1LQFN3A".utf8), prefix: "a") == [])
    }

    /// BIP 350's invalid vectors, and a Bech32 (not m) string.
    @Test(arguments: [
        ("qyrz8wqd2c9m", "a", Bech32m.Failure.noSeparator),
        ("1qyrz8wqd2c9m", "a", .noSeparator),
        ("y1b0jsk6g", "y", .badCharacter(offset: 2)),
        ("lt1igcx5c0", "lt", .badCharacter(offset: 3)),
        ("in1muywd", "in", .noSeparator),
        ("mm1crxm3i", "mm", .badCharacter(offset: 8)),
        ("au1s5cgom", "au", .badCharacter(offset: 7)),
        ("M1VUXWEZ", "m", .badChecksum),
        ("16plkw9", "a", .noSeparator),
        ("a12uel5l", "a", .badChecksum),
        ("A1lqfn3a", "a", .mixedCase),
        ("b1lqfn3a", "a", .wrongPrefix("b")),
    ])
    func bip350InvalidVectors(text: String, prefix: String, failure: Bech32m.Failure) {
        #expect(throws: failure) { try Bech32m.decode(Array(text.utf8), prefix: prefix) }
    }
}

@Suite("member identities")
struct MemberKeyTests {
    /// The test vector of docs/sharing.md, computed independently with
    /// Python's `cryptography` (X25519, Ed25519) and BIP 350's reference
    /// Bech32m: X25519 secret key 00 01 … 1f, Ed25519 seed 20 21 … 3f.
    static let vectorSecret =
        "coffer-secret1qyqqzqsrqszsvpcgpy9qkrqdpc83qygjzv2p29shrqv35xcur50p7gppyg3jgffxyu5zj23t9skjutesxyerxdp4xcmnswf68v7r603lrwjal6"
    static let vectorPublic =
        "coffer1qx85p3ddk68j2cj2ukepf6nk0fhvjnvzn57hkhs66xax703p8q5972dvhts5r0x27zezux556dxsh3ekrefx6zl7ztyf099ujv3fvmwh7lt08q"

    @Test func knownAnswer() throws {
        let key = try MemberSecretKey(text: secret(Self.vectorSecret))
        #expect(key.publicKey.text == Self.vectorPublic)
        #expect(hex(key.publicKey.boxKey) == "8f40c5adb68f25624ae5b214ea767a6ec94d829d3d7b5e1ad1ba6f3e2138285f")
        #expect(hex(key.publicKey.signKey) == "29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7")
        #expect(String(decoding: key.secretText().revealedBytes(), as: UTF8.self) == Self.vectorSecret)
        // Ed25519 is deterministic: the same signature as Python's.
        #expect(
            hex(key.sign(Array("coffer test vector".utf8)))
                == "763b7d747c4092a19c3c7c53de2c0019059ee8bbcb6338ed95a32096f77291627e0b779e186f51e320968943a263900d5184a49fb62787e1e7fc035171bf6605")
        let parsed = try MemberPublicKey(text: Self.vectorPublic.uppercased())
        #expect(parsed == key.publicKey)
        #expect(try MemberPublicKey(text: "  \(Self.vectorPublic)\n") == key.publicKey)
    }

    @Test func generatedKeysRoundTrip() throws {
        let a = MemberSecretKey.generate()
        let b = MemberSecretKey.generate()
        #expect(a.publicKey != b.publicKey)
        #expect(a.publicKey.text.count == 117)
        #expect(try MemberPublicKey(text: a.publicKey.text) == a.publicKey)
        #expect(try MemberSecretKey(text: a.secretText()).publicKey == a.publicKey)
        let message = Array("bundle header".utf8)
        let sig = a.sign(message)
        #expect(a.publicKey.isValidSignature(sig, of: message))
        #expect(!b.publicKey.isValidSignature(sig, of: message))
        #expect(!a.publicKey.isValidSignature(sig, of: message + [0]))
        #expect(!a.publicKey.isValidSignature(Array(sig.prefix(63)), of: message))
        let master = SecretBytes.random(count: 32)
        let sealed = try a.publicKey.seal(master)
        #expect(sealed.count == 32 + 48)
        #expect(try a.openSealed(sealed).constantTimeEquals(master))
        #expect(throws: CryptoError.authenticationFailed) { try b.openSealed(sealed) }
        var flipped = sealed
        flipped[40] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try a.openSealed(flipped) }
        #expect(throws: CryptoError.authenticationFailed) { try a.openSealed(Array(sealed.prefix(47))) }
    }

    /// Sealing one key to many members: each box opens, with the prefix,
    /// for its own member only; a weak key gets nil at its index and does
    /// not stop the others.
    @Test func sealToEachMember() throws {
        let members = (0..<3).map { _ in MemberSecretKey.generate() }
        let good = members[0].publicKey
        let weak = try MemberPublicKey(
            uncheckedText: Bech32m.encode(prefix: "coffer", bytes: [1] + [UInt8](repeating: 0, count: 32) + good.signKey))
        let master = SecretBytes.random(count: 32)
        let prefix = Array("vault-and-epoch".utf8)
        let boxes = MemberPublicKey.seal(master, prefix: prefix, toEach: [members[0].publicKey, weak, members[1].publicKey, members[2].publicKey])
        #expect(boxes.count == 4)
        #expect(boxes[1] == nil)
        for (member, box) in zip(members, [boxes[0], boxes[2], boxes[3]]) {
            let box = try #require(box)
            let opened = try member.openSealed(box, prefixLength: prefix.count)
            #expect(opened.prefix == prefix)
            #expect(opened.secret.constantTimeEquals(master))
        }
        #expect(throws: CryptoError.authenticationFailed) { try members[1].openSealed(try #require(boxes[0]), prefixLength: prefix.count) }
        #expect(boxes[0] != boxes[2])
    }

    /// Every single-character substitution and every swap of two
    /// neighbouring characters of a public identity is refused.
    @Test func typingErrorsAreCaught() {
        let text = Array(Self.vectorPublic.utf8)
        let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
        var accepted = 0
        for i in 7..<text.count {
            for c in alphabet where c != text[i] {
                var t = text
                t[i] = c
                if (try? MemberPublicKey(text: String(decoding: t, as: UTF8.self))) != nil { accepted += 1 }
            }
            if i + 1 < text.count, text[i] != text[i + 1] {
                var t = text
                t.swapAt(i, i + 1)
                if (try? MemberPublicKey(text: String(decoding: t, as: UTF8.self))) != nil { accepted += 1 }
            }
        }
        #expect(accepted == 0)
    }

    static let malformed: [(text: String, says: String)] = [
        ("", "it is empty"),
        ("coffer1", "it is too short"),
        ("coffer1xyz", "it is too short"),
        ("age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq", "it does not start with coffer1"),
        (String(vectorPublic.dropLast()), "checksum does not match"),
        (vectorPublic + "q", "checksum does not match"),
        (String(vectorPublic.prefix(20)) + "b" + String(vectorPublic.dropFirst(21)), "character 21 is not one"),
        (vectorSecret, "this is a secret identity"),
    ]

    @Test(arguments: malformed)
    func malformedPublicIdentities(text: String, says: String) {
        do {
            _ = try MemberPublicKey(text: text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(says), "\(error)")
        }
    }

    @Test func wrongVersionAndLengthAndWeakKeys() {
        // A valid checksum over a payload of another version or length.
        let v2 = Bech32m.encode(prefix: "coffer", bytes: [2] + [UInt8](repeating: 9, count: 64))
        #expect(throws: MemberKeyError.unsupportedVersion(2)) { try MemberPublicKey(text: v2) }
        let short = Bech32m.encode(prefix: "coffer", bytes: [1] + [UInt8](repeating: 9, count: 63))
        #expect(throws: MemberKeyError.malformed("it has the wrong length")) { try MemberPublicKey(text: short) }
        let good = try? MemberPublicKey(text: Self.vectorPublic)
        // The X25519 key of order 1 (zero) and a low-order point.
        for weak in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            let text = Bech32m.encode(prefix: "coffer", bytes: [1] + weak + (good?.signKey ?? []))
            #expect(throws: MemberKeyError.self) { try MemberPublicKey(text: text) }
        }
        // An Ed25519 key that is not a point of the main subgroup.
        let text = Bech32m.encode(prefix: "coffer", bytes: [1] + (good?.boxKey ?? []) + [UInt8](repeating: 0, count: 32))
        #expect(throws: MemberKeyError.self) { try MemberPublicKey(text: text) }
        #expect(throws: MemberKeyError.publicGivenAsSecret) { try MemberSecretKey(text: secret(Self.vectorPublic)) }
    }
}
