import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Reading OpenSSH and PEM private keys made by ssh-keygen
/// (Fixtures/ssh/README.md), writing them back, generating and signing.
@Suite("SSH keys: parsing, generation, signing")
struct SSHKeyTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/ssh")

    static func bytes(_ name: String) -> [UInt8] {
        Array((try? Data(contentsOf: dir.appendingPathComponent(name))) ?? Data())
    }

    static func text(_ name: String) -> String { String(decoding: bytes(name), as: UTF8.self) }

    /// ssh-keygen's fingerprint of each fixture.
    static let fingerprints: [String: String] = {
        var out: [String: String] = [:]
        for line in text("fingerprints.txt").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
        }
        return out
    }()

    static let readable: [(file: String, type: SSHKeyType, bits: Int)] = [
        ("ed25519", .ed25519, 256), ("ecdsa256", .ecdsaP256, 256), ("ecdsa384", .ecdsaP384, 384), ("rsa2048", .rsa, 2048),
        ("rsa2048-pkcs1", .rsa, 2048), ("rsa2048-pkcs8", .rsa, 2048), ("ecdsa256-sec1", .ecdsaP256, 256), ("ecdsa384-pkcs8", .ecdsaP384, 384),
    ]

    @Test("every fixture reads with ssh-keygen's public key and fingerprint", arguments: readable.map(\.file))
    func readsFixture(_ file: String) throws {
        let expected = Self.readable.first { $0.file == file }!
        let key = try SSHKeyItem.readPrivateKey(Self.bytes(file))
        #expect(key.type == expected.type)
        #expect(key.bits == expected.bits)
        let pub = try #require(SSHPublicKey.parseAuthorizedKey(Self.text(file + ".pub")))
        #expect(key.publicKeyBlob == pub.blob)
        #expect(key.fingerprint == Self.fingerprints[file])
        if !file.contains("-") { #expect(key.comment == pub.comment) } // PEM files carry no comment
    }

    @Test("a signature by each fixture verifies under its .pub, and not for other data", arguments: readable.map(\.file))
    func signs(_ file: String) throws {
        let key = try SSHKeyItem.readPrivateKey(Self.bytes(file))
        let pub = try #require(SSHPublicKey.parseAuthorizedKey(Self.text(file + ".pub")))
        let data = Array("data to sign".utf8)
        let flags: [UInt32] = key.type == .rsa ? [SSHSignatureFlags.rsaSHA256, SSHSignatureFlags.rsaSHA512] : [0]
        for f in flags {
            let sig = try key.sign(data, flags: f)
            #expect(SSHPublicKey.verify(signature: sig, of: data, by: pub.blob))
            #expect(!SSHPublicKey.verify(signature: sig, of: Array("other data".utf8), by: pub.blob))
            var r = SSHReader(sig)
            let alg = try r.text()
            switch f {
            case SSHSignatureFlags.rsaSHA256: #expect(alg == "rsa-sha2-256")
            case SSHSignatureFlags.rsaSHA512: #expect(alg == "rsa-sha2-512")
            default: #expect(alg == key.type.rawValue)
            }
        }
        if key.type == .rsa {
            #expect(throws: SSHKeyError.self) { try key.sign(data, flags: 0) }
        }
    }

    @Test("the stored OpenSSH form reads back as the same key", arguments: readable.map(\.file))
    func roundTrip(_ file: String) throws {
        let key = try SSHKeyItem.readPrivateKey(Self.bytes(file)).with(comment: "round trip")
        let pem = key.openSSHPEM()
        #expect(pem.hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
        let back = try SSHPrivateKey.parse(Array(pem.utf8))
        #expect(back.publicKeyBlob == key.publicKeyBlob)
        #expect(back.comment == "round trip")
        let sig = try back.sign([1, 2, 3], flags: SSHSignatureFlags.rsaSHA512)
        #expect(SSHPublicKey.verify(signature: sig, of: [1, 2, 3], by: key.publicKeyBlob))
    }

    @Test("generated keys of every type sign and read back")
    func generates() throws {
        for (type, bits) in [(SSHKeyType.ed25519, nil), (.ecdsaP256, nil), (.ecdsaP384, nil), (.rsa, 2048)] as [(SSHKeyType, Int?)] {
            let key = try SSHPrivateKey.generate(type, bits: bits, comment: "gen")
            #expect(key.type == type)
            let back = try SSHPrivateKey.parse(Array(key.openSSHPEM().utf8))
            #expect(back.publicKeyBlob == key.publicKeyBlob)
            let sig = try back.sign([9], flags: SSHSignatureFlags.rsaSHA256)
            #expect(SSHPublicKey.verify(signature: sig, of: [9], by: key.publicKeyBlob))
        }
        let a = try SSHPrivateKey.generate(.ed25519, comment: "a")
        let b = try SSHPrivateKey.generate(.ed25519, comment: "b")
        #expect(a.publicKeyBlob != b.publicKeyBlob)
        #expect(throws: SSHKeyError.self) { try SSHPrivateKey.generate(.rsa, bits: 1024, comment: "") }
        #expect(throws: SSHKeyError.self) { try SSHPrivateKey.generate(.ed25519, bits: 384, comment: "") }
    }

    @Test("an encrypted key is refused as encrypted, not as damaged")
    func encrypted() {
        #expect(throws: SSHKeyError.encrypted) { try SSHPrivateKey.parse(Self.bytes("ed25519-encrypted")) }
        #expect(SSHKeyFile.isEncrypted(Self.bytes("ed25519-encrypted")))
        #expect(!SSHKeyFile.isEncrypted(Self.bytes("ed25519")))
        let e = #expect(throws: CofferError.self) { try SSHKeyItem.readPrivateKey(Self.bytes("ed25519-encrypted")) }
        #expect(e?.kind == .badData)
    }

    @Test("keys Coffer does not take are refused with the reason")
    func unsupported() {
        #expect(throws: SSHKeyError.unsupported("RSA keys of 1024 bits are too small; Coffer accepts 2048 bits or more")) {
            try SSHPrivateKey.parse(Self.bytes("rsa1024"))
        }
        #expect(throws: SSHKeyError.unsupported("key type 'ecdsa-sha2-nistp521'")) { try SSHPrivateKey.parse(Self.bytes("ecdsa521")) }
    }

    @Test("malformed files are refused, never a trap")
    func malformed() throws {
        for bad in ["", "hello", "-----BEGIN OPENSSH PRIVATE KEY-----\n!!!\n-----END OPENSSH PRIVATE KEY-----\n", Self.text("ed25519.pub")] {
            #expect(throws: SSHKeyError.self) { try SSHPrivateKey.parse(Array(bad.utf8)) }
        }
        #expect(throws: SSHKeyError.self) { try SSHPrivateKey.parse([0xff, 0xfe, 0x00]) }
        // Every truncation and every one-bit change of the binary
        // structure: refused, or read with the same key; never a crash.
        let body = try #require(SSHPrivateKey.pemBody(Self.text("ed25519"), label: "OPENSSH PRIVATE KEY"))
        let der = Array(try #require(Data(base64Encoded: body, options: .ignoreUnknownCharacters)))
        let original = try SSHPrivateKey.parseOpenSSH(der)
        for n in 0..<der.count {
            #expect(throws: SSHKeyError.self) { try SSHPrivateKey.parseOpenSSH(Array(der[0..<n])) }
        }
        var accepted = 0
        for i in 0..<der.count {
            var changed = der
            changed[i] ^= 0x01
            if let key = try? SSHPrivateKey.parseOpenSSH(changed) {
                accepted += 1
                #expect(key.publicKeyBlob == original.publicKeyBlob)
                #expect(key.comment != original.comment)
            }
        }
        // Only a flip inside the comment (free text) can leave a file that
        // reads; the key, the lengths, the check numbers and the padding
        // are all checked.
        #expect(accepted <= original.comment.utf8.count)
    }

    @Test("the agent encoding reads back (as ssh-add sends it)")
    func agentEncoding() throws {
        for file in ["ed25519", "ecdsa384", "rsa2048"] {
            let key = try SSHKeyItem.readPrivateKey(Self.bytes(file))
            var r = SSHReader(key.agentEncoding().revealedBytes())
            let back = try SSHPrivateKey.readPrivateFields(&r)
            #expect(r.isAtEnd)
            #expect(back.publicKeyBlob == key.publicKeyBlob)
            #expect(back.comment == key.comment)
        }
    }

    @Test("an ssh-key item holds the key, its public key and comment")
    func item() throws {
        let box = try TemporaryVault()
        let key = try SSHKeyItem.readPrivateKey(Self.bytes("ed25519"))
        try box.vault.addSSHKey(key, name: "ssh/one", confirm: true)
        let item = try box.vault.item(named: "ssh/one")
        #expect(item.type == .sshKey)
        #expect(item.field("public-key")?.value == key.authorizedKey)
        #expect(item.field("private-key")?.isSecret == true)
        #expect(item.primaryField?.name == "private-key")
        let served = try box.vault.sshKey(named: "ssh/one")
        #expect(served.confirm)
        #expect(served.key.publicKeyBlob == key.publicKeyBlob)
        let notKey = #expect(throws: CofferError.self) {
            try box.vault.add(ItemDraft(name: "plain", type: .apiKey, fields: [Field(name: "key", value: "x", isSecret: true)]))
            _ = try box.vault.sshKey(named: "plain")
        }
        #expect(notKey?.kind == .usage)
    }
}
