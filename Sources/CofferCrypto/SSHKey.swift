internal import CSodium
import Crypto
import Foundation
import _CryptoExtras

/// The SSH key algorithms Coffer stores and signs with. Ed25519 comes from
/// libsodium; ECDSA and RSA (which libsodium lacks) from swift-crypto.
public enum SSHKeyType: String, Sendable, CaseIterable {
    case ed25519 = "ssh-ed25519"
    case ecdsaP256 = "ecdsa-sha2-nistp256"
    case ecdsaP384 = "ecdsa-sha2-nistp384"
    case rsa = "ssh-rsa"

    /// The ECDSA curve's SSH name.
    var curve: String? {
        switch self {
        case .ecdsaP256: return "nistp256"
        case .ecdsaP384: return "nistp384"
        default: return nil
        }
    }

    /// What `ssh-keygen -l` shows.
    public var displayName: String {
        switch self {
        case .ed25519: return "ED25519"
        case .ecdsaP256, .ecdsaP384: return "ECDSA"
        case .rsa: return "RSA"
        }
    }
}

/// Why a key could not be read, generated or used. Messages never hold
/// key material.
public enum SSHKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a key file Coffer can read, or a damaged one.
    case malformed(String)
    /// A key protected by a passphrase.
    case encrypted
    /// A well-formed key of an algorithm or size Coffer does not accept.
    case unsupported(String)
    /// The signature asked for cannot be made (e.g. RSA with SHA-1).
    case cannotSign(String)

    public var description: String {
        switch self {
        case .malformed(let why): return "not a readable SSH private key: \(why)"
        case .encrypted: return "the SSH key is encrypted with a passphrase"
        case .unsupported(let why): return "unsupported SSH key: \(why)"
        case .cannotSign(let why): return "cannot sign: \(why)"
        }
    }
}

/// The signature flags of an agent sign request (draft-ietf-sshm-ssh-agent).
public enum SSHSignatureFlags {
    public static let rsaSHA256: UInt32 = 2
    public static let rsaSHA512: UInt32 = 4
}

/// An SSH private key. The private fields (the key type's part of the
/// OpenSSH encoding) are kept in guarded memory; a sign copies them out
/// for the operation and wipes the copy.
public final class SSHPrivateKey: Sendable {
    public let type: SSHKeyType
    /// The public key in SSH wire form (what the agent lists).
    public let publicKeyBlob: [UInt8]
    public let comment: String
    /// The key's size in bits (Ed25519: 256).
    public let bits: Int
    /// The private fields, SSH-encoded, after the key type string.
    let secret: SecretBytes

    init(type: SSHKeyType, publicKeyBlob: [UInt8], comment: String, bits: Int, secret: SecretBytes) {
        self.type = type
        self.publicKeyBlob = publicKeyBlob
        self.comment = comment
        self.bits = bits
        self.secret = secret
    }

    /// The same key with another comment.
    public func with(comment: String) -> SSHPrivateKey {
        SSHPrivateKey(type: type, publicKeyBlob: publicKeyBlob, comment: comment, bits: bits, secret: secret)
    }

    /// `type base64 comment`, as in `authorized_keys` and `KEY.pub`.
    public var authorizedKey: String { SSHPublicKey.authorizedKey(publicKeyBlob, comment: comment) }

    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    public var fingerprint: String { SSHPublicKey.fingerprint(publicKeyBlob) }

    // MARK: Reading

    /// Reads a private key file: OpenSSH's format (`openssh-key-v1`, not
    /// encrypted), or PEM (PKCS#8, SEC1 or PKCS#1) for ECDSA and RSA.
    public static func parse(_ text: [UInt8]) throws(SSHKeyError) -> SSHPrivateKey {
        guard let s = String(validating: text, as: UTF8.self) else { throw .malformed("the file is not text") }
        if let body = pemBody(s, label: "OPENSSH PRIVATE KEY") {
            guard var der = Data(base64Encoded: body, options: .ignoreUnknownCharacters).map(Array.init) else {
                throw .malformed("bad base64 in the OpenSSH key")
            }
            defer { der.wipe() }
            return try parseOpenSSH(der)
        }
        if s.contains("ENCRYPTED") && s.contains("-----BEGIN") { throw .encrypted }
        for label in ["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"] where pemBody(s, label: label) != nil {
            return try parsePEM(s)
        }
        if s.hasPrefix("ssh-") || s.hasPrefix("ecdsa-") { throw .malformed("this is a public key; give the private key file (without .pub)") }
        throw .malformed("no '-----BEGIN OPENSSH PRIVATE KEY-----' or PEM private key block found")
    }

    /// The base64 body between PEM lines with `label`, or nil.
    package static func pemBody(_ s: String, label: String) -> String? {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        guard let b = s.range(of: begin), let e = s.range(of: end, range: b.upperBound..<s.endIndex) else { return nil }
        return String(s[b.upperBound..<e.lowerBound])
    }

    static let magic = Array("openssh-key-v1".utf8) + [0]

    /// The binary `openssh-key-v1` structure (PROTOCOL.key).
    package static func parseOpenSSH(_ der: [UInt8]) throws(SSHKeyError) -> SSHPrivateKey {
        guard der.count > magic.count, Array(der[0..<magic.count]) == magic else { throw .malformed("no openssh-key-v1 header") }
        var r = SSHReader(der, offset: magic.count)
        do {
            let cipher = try r.text()
            let kdf = try r.text()
            let kdfOptions = try r.string()
            if cipher != "none" || kdf != "none" { throw SSHKeyError.encrypted }
            guard kdfOptions.isEmpty else { throw SSHKeyError.malformed("KDF options without a KDF") }
            let n = try r.uint32()
            guard n == 1 else { throw SSHKeyError.unsupported("the file holds \(n) keys; Coffer reads files of one key") }
            let publicBlob = try r.string()
            var privateSection = try r.string()
            defer { privateSection.wipe() }
            guard r.isAtEnd else { throw SSHKeyError.malformed("bytes after the private section") }
            guard privateSection.count % 8 == 0 else { throw SSHKeyError.malformed("private section not padded to 8 bytes") }
            var p = SSHReader(privateSection)
            guard try p.uint32() == p.uint32() else { throw SSHKeyError.malformed("check numbers differ (damaged file)") }
            let key = try readPrivateFields(&p)
            let padding = p.rest()
            for (i, b) in padding.enumerated() where Int(b) != i + 1 { throw SSHKeyError.malformed("bad padding") }
            guard key.publicKeyBlob == publicBlob else { throw SSHKeyError.malformed("the public key does not match the private key") }
            return key
        } catch let e as SSHKeyError {
            throw e
        } catch let e as CryptoError {
            throw .malformed("\(e)")
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// A key type string, its private fields and a comment, as in an
    /// OpenSSH private section and in the agent's ADD_IDENTITY message.
    /// The fields are checked against each other.
    public static func readPrivateFields(_ r: inout SSHReader) throws(SSHKeyError) -> SSHPrivateKey {
        do {
            let name = try r.text()
            guard let type = SSHKeyType(rawValue: name) else { throw SSHKeyError.unsupported("key type '\(name.prefix(40))'") }
            var w = SSHWriter()
            defer { w.wipe() }
            let publicBlob: [UInt8]
            let bits: Int
            switch type {
            case .ed25519:
                let pk = try r.string()
                var sk = try r.string()
                defer { sk.wipe() }
                guard pk.count == 32, sk.count == 64 else { throw SSHKeyError.malformed("Ed25519 key of the wrong length") }
                var derived = [UInt8](repeating: 0, count: 32)
                var scratch = [UInt8](repeating: 0, count: 64)
                defer { scratch.wipe() }
                Sodium.ensure()
                _ = crypto_sign_seed_keypair(&derived, &scratch, sk)
                guard derived == pk, Array(sk[32..<64]) == pk else { throw SSHKeyError.malformed("the Ed25519 public key does not match the private key") }
                var b = SSHWriter()
                b.string(type.rawValue)
                b.string(pk)
                publicBlob = b.bytes
                bits = 256
                w.string(pk)
                w.string(sk)
            case .ecdsaP256, .ecdsaP384:
                let curve = try r.text()
                guard curve == type.curve else { throw SSHKeyError.malformed("curve '\(curve.prefix(20))' does not match the key type") }
                let q = try r.string()
                var d = try r.positiveMPInt()
                defer { d.wipe() }
                let size = type == .ecdsaP256 ? 32 : 48
                guard d.count <= size else { throw SSHKeyError.malformed("ECDSA scalar too long") }
                var padded = [UInt8](repeating: 0, count: size - d.count) + d
                defer { padded.wipe() }
                let derivedQ = try ecdsaPublic(type, scalar: padded)
                guard derivedQ == q else { throw SSHKeyError.malformed("the ECDSA public key does not match the private key") }
                publicBlob = ecdsaBlob(type, q: q)
                bits = size * 8
                w.string(curve)
                w.string(q)
                w.mpint(d)
            case .rsa:
                var parts: [[UInt8]] = []
                defer { for i in parts.indices { parts[i].wipe() } }
                for _ in 0..<6 { parts.append(try r.positiveMPInt()) }
                // n, e, d, iqmp, p, q
                let n = parts[0]
                bits = bitLength(n)
                guard bits >= 2048 else { throw SSHKeyError.unsupported("RSA keys of \(bits) bits are too small; Coffer accepts 2048 bits or more") }
                guard bits <= 16384 else { throw SSHKeyError.unsupported("RSA keys of more than 16384 bits") }
                do {
                    let key = try _RSA.Signing.PrivateKey(n: parts[0], e: parts[1], d: parts[2], p: parts[4], q: parts[5])
                    guard try key.publicKey.getKeyPrimitives().modulus.drop(while: { $0 == 0 }).elementsEqual(n) else {
                        throw SSHKeyError.malformed("RSA modulus does not match its primes")
                    }
                } catch let e as SSHKeyError {
                    throw e
                } catch {
                    throw SSHKeyError.malformed("the RSA key's numbers are not consistent")
                }
                publicBlob = rsaBlob(n: n, e: parts[1])
                for part in parts { w.mpint(part) }
            }
            let comment = try r.text()
            return SSHPrivateKey(type: type, publicKeyBlob: publicBlob, comment: comment, bits: bits, secret: SecretBytes(copying: w.bytes))
        } catch let e as SSHKeyError {
            throw e
        } catch let e as CryptoError {
            throw .malformed("\(e)")
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// PEM private keys through swift-crypto: ECDSA P-256/P-384 (PKCS#8
    /// or SEC1) and RSA (PKCS#8 or PKCS#1).
    static func parsePEM(_ s: String) throws(SSHKeyError) -> SSHPrivateKey {
        if let k = try? P256.Signing.PrivateKey(pemRepresentation: s) {
            return try fromECDSA(.ecdsaP256, scalar: Array(k.rawRepresentation), q: Array(k.publicKey.x963Representation))
        }
        if let k = try? P384.Signing.PrivateKey(pemRepresentation: s) {
            return try fromECDSA(.ecdsaP384, scalar: Array(k.rawRepresentation), q: Array(k.publicKey.x963Representation))
        }
        if let k = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: s) {
            guard k.keySizeInBits >= 2048 else {
                throw .unsupported("RSA keys of \(k.keySizeInBits) bits are too small; Coffer accepts 2048 bits or more")
            }
            return try fromRSA(k)
        }
        if (try? P521.Signing.PrivateKey(pemRepresentation: s)) != nil {
            throw .unsupported("ECDSA on P-521; Coffer accepts P-256 and P-384")
        }
        throw .malformed("a PEM key that is neither ECDSA P-256/P-384 nor RSA (PKCS#8, SEC1 or PKCS#1)")
    }

    static func fromECDSA(_ type: SSHKeyType, scalar: [UInt8], q: [UInt8], comment: String = "") throws(SSHKeyError) -> SSHPrivateKey {
        var w = SSHWriter()
        defer { w.wipe() }
        w.string(type.curve ?? "")
        w.string(q)
        w.mpint(scalar)
        return SSHPrivateKey(
            type: type, publicKeyBlob: ecdsaBlob(type, q: q), comment: comment, bits: type == .ecdsaP256 ? 256 : 384, secret: SecretBytes(copying: w.bytes))
    }

    static func fromRSA(_ key: _RSA.Signing.PrivateKey, comment: String = "") throws(SSHKeyError) -> SSHPrivateKey {
        var der = Array(key.derRepresentation)
        defer { der.wipe() }
        var ints = try DER.rsaPrivateKey(der)
        defer { for i in ints.indices { ints[i].wipe() } }
        // PKCS#1: n, e, d, p, q, dP, dQ, qInv; OpenSSH: n, e, d, iqmp, p, q.
        var w = SSHWriter()
        defer { w.wipe() }
        for i in [0, 1, 2, 7, 3, 4] { w.mpint(ints[i]) }
        return SSHPrivateKey(
            type: .rsa, publicKeyBlob: rsaBlob(n: ints[0], e: ints[1]), comment: comment, bits: bitLength(ints[0]), secret: SecretBytes(copying: w.bytes))
    }

    static func ecdsaPublic(_ type: SSHKeyType, scalar: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        do {
            switch type {
            case .ecdsaP256: return Array(try P256.Signing.PrivateKey(rawRepresentation: scalar).publicKey.x963Representation)
            default: return Array(try P384.Signing.PrivateKey(rawRepresentation: scalar).publicKey.x963Representation)
            }
        } catch {
            throw .malformed("the ECDSA scalar is not a valid private key")
        }
    }

    static func ecdsaBlob(_ type: SSHKeyType, q: [UInt8]) -> [UInt8] {
        var b = SSHWriter()
        b.string(type.rawValue)
        b.string(type.curve ?? "")
        b.string(q)
        return b.bytes
    }

    static func rsaBlob(n: [UInt8], e: [UInt8]) -> [UInt8] {
        var b = SSHWriter()
        b.string(SSHKeyType.rsa.rawValue)
        b.mpint(e)
        b.mpint(n)
        return b.bytes
    }

    static func bitLength(_ magnitude: [UInt8]) -> Int {
        let m = magnitude.drop { $0 == 0 }
        guard let first = m.first else { return 0 }
        return (m.count - 1) * 8 + (8 - first.leadingZeroBitCount)
    }

    // MARK: Generating

    /// A new key: Ed25519 (libsodium), ECDSA P-256/P-384 (`bits` 256 or
    /// 384) or RSA (`bits` 2048, 3072 or 4096; default 3072).
    public static func generate(_ type: SSHKeyType, bits: Int? = nil, comment: String) throws(SSHKeyError) -> SSHPrivateKey {
        switch type {
        case .ed25519:
            if let bits, bits != 256 { throw .unsupported("Ed25519 keys have 256 bits; omit the size") }
            Sodium.ensure()
            var pk = [UInt8](repeating: 0, count: 32)
            var sk = [UInt8](repeating: 0, count: 64)
            defer { sk.wipe() }
            _ = crypto_sign_keypair(&pk, &sk)
            var w = SSHWriter()
            defer { w.wipe() }
            w.string(pk)
            w.string(sk)
            var b = SSHWriter()
            b.string(type.rawValue)
            b.string(pk)
            return SSHPrivateKey(type: .ed25519, publicKeyBlob: b.bytes, comment: comment, bits: 256, secret: SecretBytes(copying: w.bytes))
        case .ecdsaP256:
            let k = P256.Signing.PrivateKey()
            return try fromECDSA(.ecdsaP256, scalar: Array(k.rawRepresentation), q: Array(k.publicKey.x963Representation), comment: comment)
        case .ecdsaP384:
            let k = P384.Signing.PrivateKey()
            return try fromECDSA(.ecdsaP384, scalar: Array(k.rawRepresentation), q: Array(k.publicKey.x963Representation), comment: comment)
        case .rsa:
            let size = bits ?? 3072
            guard [2048, 3072, 4096].contains(size) else { throw .unsupported("RSA keys of \(size) bits; choose 2048, 3072 or 4096") }
            do {
                return try fromRSA(try _RSA.Signing.PrivateKey(keySize: .init(bitCount: size)), comment: comment)
            } catch let e as SSHKeyError {
                throw e
            } catch {
                throw .unsupported("RSA key generation failed: \(error)")
            }
        }
    }

    // MARK: Writing

    /// The key as an unencrypted OpenSSH private key file (what
    /// `ssh-keygen -N ''` writes). The text holds the private key.
    public func openSSHPEM() -> String {
        var section = SSHWriter()
        defer { section.wipe() }
        let check = UInt32.random(in: .min ... .max)
        section.uint32(check)
        section.uint32(check)
        section.string(type.rawValue)
        secret.withBytes { section.raw($0) }
        section.string(comment)
        var pad: UInt8 = 1
        while section.bytes.count % 8 != 0 {
            section.byte(pad)
            pad += 1
        }
        var file = SSHWriter()
        defer { file.wipe() }
        file.raw(Self.magic)
        file.string("none")
        file.string("none")
        file.string([UInt8]())
        file.uint32(1)
        file.string(publicKeyBlob)
        file.string(section.bytes)
        let b64 = Data(file.bytes).base64EncodedString()
        var lines = ["-----BEGIN OPENSSH PRIVATE KEY-----"]
        var i = b64.startIndex
        while i < b64.endIndex {
            let j = b64.index(i, offsetBy: 70, limitedBy: b64.endIndex) ?? b64.endIndex
            lines.append(String(b64[i..<j]))
            i = j
        }
        lines.append("-----END OPENSSH PRIVATE KEY-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The private fields in the agent's ADD_IDENTITY layout (key type,
    /// fields, comment), for tests and for handing a key to an agent.
    public func agentEncoding() -> SecretBytes {
        var w = SSHWriter()
        defer { w.wipe() }
        w.string(type.rawValue)
        secret.withBytes { w.raw($0) }
        w.string(comment)
        return SecretBytes(copying: w.bytes)
    }

    // MARK: Signing

    /// An SSH signature blob (`string algorithm, string signature`) of
    /// `data`. For RSA, `flags` chooses SHA-256 or SHA-512; RSA with SHA-1
    /// (`ssh-rsa` signatures, no flag) is refused.
    public func sign(_ data: [UInt8], flags: UInt32 = 0) throws(SSHKeyError) -> [UInt8] {
        var fields = secret.withBytes { Array($0) }
        defer { fields.wipe() }
        var r = SSHReader(fields)
        var out = SSHWriter()
        do {
            switch type {
            case .ed25519:
                _ = try r.string()
                var sk = try r.string()
                defer { sk.wipe() }
                var sig = [UInt8](repeating: 0, count: 64)
                guard crypto_sign_detached(&sig, nil, data, UInt64(data.count), sk) == 0 else { throw SSHKeyError.cannotSign("libsodium refused") }
                out.string(type.rawValue)
                out.string(sig)
            case .ecdsaP256, .ecdsaP384:
                _ = try r.string()
                _ = try r.string()
                var d = try r.positiveMPInt()
                defer { d.wipe() }
                let size = type == .ecdsaP256 ? 32 : 48
                var padded = [UInt8](repeating: 0, count: size - min(size, d.count)) + d
                defer { padded.wipe() }
                let raw: [UInt8]
                if type == .ecdsaP256 {
                    raw = Array(try P256.Signing.PrivateKey(rawRepresentation: padded).signature(for: data).rawRepresentation)
                } else {
                    raw = Array(try P384.Signing.PrivateKey(rawRepresentation: padded).signature(for: data).rawRepresentation)
                }
                var inner = SSHWriter()
                inner.mpint(raw[0..<size])
                inner.mpint(raw[size...])
                out.string(type.rawValue)
                out.string(inner.bytes)
            case .rsa:
                var p: [[UInt8]] = []
                defer { for i in p.indices { p[i].wipe() } }
                for _ in 0..<6 { p.append(try r.positiveMPInt()) }
                let key = try _RSA.Signing.PrivateKey(n: p[0], e: p[1], d: p[2], p: p[4], q: p[5])
                if flags & SSHSignatureFlags.rsaSHA512 != 0 {
                    let sig = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
                    out.string("rsa-sha2-512")
                    out.string(Array(sig.rawRepresentation))
                } else if flags & SSHSignatureFlags.rsaSHA256 != 0 {
                    let sig = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                    out.string("rsa-sha2-256")
                    out.string(Array(sig.rawRepresentation))
                } else {
                    throw SSHKeyError.cannotSign("RSA signatures with SHA-1 (ssh-rsa) are refused; the client must ask for rsa-sha2-256 or rsa-sha2-512")
                }
            }
        } catch let e as SSHKeyError {
            throw e
        } catch {
            throw .cannotSign("\(error)")
        }
        return out.bytes
    }
}

/// Public keys in SSH wire form.
public enum SSHPublicKey {
    /// `type base64 comment`.
    public static func authorizedKey(_ blob: [UInt8], comment: String) -> String {
        var r = SSHReader(blob)
        let type = (try? r.text()) ?? "unknown"
        let line = "\(type) \(Data(blob).base64EncodedString())"
        return comment.isEmpty ? line : "\(line) \(comment)"
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256 (libsodium).
    public static func fingerprint(_ blob: [UInt8]) -> String {
        Sodium.ensure()
        var h = [UInt8](repeating: 0, count: 32)
        _ = crypto_hash_sha256(&h, blob, UInt64(blob.count))
        var b64 = Data(h).base64EncodedString()
        while b64.hasSuffix("=") { b64.removeLast() }
        return "SHA256:" + b64
    }

    /// Reads `type base64 [comment]` into the wire blob and the comment.
    public static func parseAuthorizedKey(_ line: String) -> (blob: [UInt8], comment: String)? {
        let parts = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, let data = Data(base64Encoded: String(parts[1])) else { return nil }
        var r = SSHReader(Array(data))
        guard let t = try? r.text(), t == parts[0] else { return nil }
        return (Array(data), parts.count > 2 ? String(parts[2]) : "")
    }

    /// Whether `signature` (an SSH signature blob) is a valid signature of
    /// `data` by the public key `blob`.
    public static func verify(signature: [UInt8], of data: [UInt8], by blob: [UInt8]) -> Bool {
        var k = SSHReader(blob)
        var s = SSHReader(signature)
        guard let keyType = try? k.text(), let type = SSHKeyType(rawValue: keyType), let sigType = try? s.text(), let sig = try? s.string(), s.isAtEnd
        else { return false }
        switch type {
        case .ed25519:
            guard sigType == keyType, let pk = try? k.string(), pk.count == 32, sig.count == 64 else { return false }
            Sodium.ensure()
            return crypto_sign_verify_detached(sig, data, UInt64(data.count), pk) == 0
        case .ecdsaP256, .ecdsaP384:
            guard sigType == keyType, (try? k.string()) != nil, let q = try? k.string() else { return false }
            var inner = SSHReader(sig)
            guard let r = try? inner.positiveMPInt(), let sv = try? inner.positiveMPInt(), inner.isAtEnd else { return false }
            let size = type == .ecdsaP256 ? 32 : 48
            guard r.count <= size, sv.count <= size else { return false }
            let raw = [UInt8](repeating: 0, count: size - r.count) + r + [UInt8](repeating: 0, count: size - sv.count) + sv
            if type == .ecdsaP256 {
                guard let pub = try? P256.Signing.PublicKey(x963Representation: q), let es = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else {
                    return false
                }
                return pub.isValidSignature(es, for: data)
            }
            guard let pub = try? P384.Signing.PublicKey(x963Representation: q), let es = try? P384.Signing.ECDSASignature(rawRepresentation: raw) else {
                return false
            }
            return pub.isValidSignature(es, for: data)
        case .rsa:
            guard let e = try? k.positiveMPInt(), let n = try? k.positiveMPInt(), let pub = try? _RSA.Signing.PublicKey(n: n, e: e) else { return false }
            let rs = _RSA.Signing.RSASignature(rawRepresentation: sig)
            switch sigType {
            case "rsa-sha2-256": return pub.isValidSignature(rs, for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
            case "rsa-sha2-512": return pub.isValidSignature(rs, for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
            default: return false
            }
        }
    }
}

/// The little DER reading an RSA private key needs: PKCS#1
/// `RSAPrivateKey` (a SEQUENCE of INTEGERs), also inside PKCS#8.
enum DER {
    struct Element {
        var tag: UInt8
        var body: ArraySlice<UInt8>
    }

    static func element(_ b: ArraySlice<UInt8>, at i: inout Int) throws(SSHKeyError) -> Element {
        guard i + 2 <= b.endIndex else { throw .malformed("truncated DER") }
        let tag = b[i]
        var len = Int(b[i + 1])
        i += 2
        if len & 0x80 != 0 {
            let n = len & 0x7f
            guard n >= 1, n <= 3, i + n <= b.endIndex else { throw .malformed("bad DER length") }
            len = 0
            for _ in 0..<n {
                len = len << 8 | Int(b[i])
                i += 1
            }
        }
        guard len <= b.endIndex - i else { throw .malformed("DER length beyond the data") }
        defer { i += len }
        return Element(tag: tag, body: b[i..<(i + len)])
    }

    /// n, e, d, p, q, dP, dQ, qInv as magnitudes.
    static func rsaPrivateKey(_ der: [UInt8]) throws(SSHKeyError) -> [[UInt8]] {
        var i = der.startIndex
        let seq = try element(der[...], at: &i)
        guard seq.tag == 0x30 else { throw .malformed("RSA key is not a DER SEQUENCE") }
        var j = seq.body.startIndex
        var ints: [[UInt8]] = []
        while j < seq.body.endIndex {
            let e = try element(seq.body, at: &j)
            guard e.tag == 0x02 else { throw .malformed("RSA key field is not an INTEGER") }
            ints.append(Array(e.body.drop { $0 == 0 }))
        }
        guard ints.count >= 9 else { throw .malformed("RSA key has \(ints.count) fields") }
        return Array(ints[1..<9])
    }
}
