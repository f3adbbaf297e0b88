internal import CSodium

/// Why a member identity (docs/sharing.md, "Identity encoding") cannot be
/// read. Never contains key material.
public enum MemberKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a `coffer1…` string: the reason in plain words.
    case malformed(String)
    /// A secret identity (`coffer-secret1…`) was given where a public one
    /// belongs.
    case secretGivenAsPublic
    /// A public identity was given where the secret one belongs.
    case publicGivenAsSecret
    /// A payload version this build does not know.
    case unsupportedVersion(UInt8)
    /// A key that is not a usable public key (a low-order point, an
    /// invalid Ed25519 point).
    case weakKey(String)

    public var description: String {
        switch self {
        case .malformed(let why): return why
        case .secretGivenAsPublic: return "this is a secret identity (coffer-secret1…), not a public one; never share it"
        case .publicGivenAsSecret: return "this is a public identity (coffer1…), not a secret one"
        case .unsupportedVersion(let v): return "identity version \(v) is newer than this coffer reads (version 1)"
        case .weakKey(let why): return why
        }
    }

    static func from(_ f: Bech32m.Failure, expected: String) -> MemberKeyError {
        switch f {
        case .tooLong: return .malformed("it is too long")
        case .mixedCase: return .malformed("it mixes upper-case and lower-case letters")
        case .noSeparator: return .malformed("it does not start with \(expected)1")
        case .wrongPrefix(let p):
            if p == MemberSecretKey.textPrefix { return .secretGivenAsPublic }
            if p == MemberPublicKey.textPrefix { return .publicGivenAsSecret }
            return .malformed("it does not start with \(expected)1")
        case .badCharacter(let offset): return .malformed("character \(offset + 1) is not one a coffer identity uses")
        case .badChecksum: return .malformed("its checksum does not match (a mistyped, truncated or altered identity)")
        case .badPadding: return .malformed("it has the wrong length")
        }
    }
}

/// A member's public identity: an X25519 key that the vault's master key
/// is sealed to (`crypto_box_seal`) and an Ed25519 key that verifies the
/// member's signatures (`crypto_sign`). Written as one line,
/// `coffer1…` (docs/sharing.md, "Identity encoding").
public struct MemberPublicKey: Sendable, Hashable {
    /// The Bech32m prefix of a public identity.
    public static let textPrefix = "coffer"
    /// The identity payload's version byte.
    static let version: UInt8 = 1
    /// The encoded length in bytes: version, X25519 key, Ed25519 key.
    public static let payloadLength = 65

    /// The X25519 public key (32 bytes).
    public let boxKey: [UInt8]
    /// The Ed25519 public key (32 bytes).
    public let signKey: [UInt8]

    /// A public identity from its two keys, which must be usable:
    /// the X25519 key not of low order, the Ed25519 key a valid point of
    /// the main subgroup (`crypto_core_ed25519_is_valid_point`).
    public init(boxKey: [UInt8], signKey: [UInt8]) throws(MemberKeyError) {
        Sodium.ensure()
        guard boxKey.count == 32, signKey.count == 32 else { throw .malformed("it has the wrong length") }
        // X25519 with a low-order point gives the all-zero shared secret,
        // which crypto_scalarmult refuses (-1): such a key would make every
        // sealed box to it readable by anyone.
        var scalar = Random.bytes(32)
        var shared = [UInt8](repeating: 0, count: 32)
        let rc = crypto_scalarmult(&shared, scalar, boxKey)
        Sodium.memzero(&scalar, 32)
        Sodium.memzero(&shared, 32)
        guard rc == 0 else { throw .weakKey("its encryption key is a weak (low-order) point") }
        guard crypto_core_ed25519_is_valid_point(signKey) == 1 else { throw .weakKey("its signing key is not a valid Ed25519 key") }
        self.boxKey = boxKey
        self.signKey = signKey
    }

    /// Parses `coffer1…` (case-insensitive, surrounding white space ignored).
    public init(text: String) throws(MemberKeyError) {
        let trimmed = text.utf8.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d }
        var end = trimmed.endIndex
        while end > trimmed.startIndex, [0x20, 0x09, 0x0a, 0x0d].contains(trimmed[trimmed.index(before: end)]) {
            end = trimmed.index(before: end)
        }
        let s = trimmed[trimmed.startIndex..<end]
        guard !s.isEmpty else { throw .malformed("it is empty") }
        let bytes: [UInt8]
        do { bytes = try Bech32m.decode(s, prefix: Self.textPrefix) } catch {
            if error == .noSeparator, s.count < 117, String(decoding: s, as: UTF8.self).lowercased().hasPrefix(Self.textPrefix + "1") {
                throw .malformed("it is too short (a truncated identity)")
            }
            throw MemberKeyError.from(error, expected: Self.textPrefix)
        }
        try self.init(payload: bytes)
    }

    /// Parses the 65-byte payload: version 1, X25519 key, Ed25519 key.
    public init(payload bytes: [UInt8]) throws(MemberKeyError) {
        guard let v = bytes.first else { throw .malformed("it has the wrong length") }
        guard v == Self.version else { throw .unsupportedVersion(v) }
        guard bytes.count == Self.payloadLength else { throw .malformed("it has the wrong length") }
        try self.init(boxKey: Array(bytes[1..<33]), signKey: Array(bytes[33..<65]))
    }

    /// A public identity from the payload of one already checked by
    /// ``init(text:)`` where it was entered (a vault's stored members):
    /// the length and version are checked, the keys' validity is not (it
    /// costs two scalar multiplications). ``seal(_:prefix:)`` still
    /// refuses a low-order X25519 key, and libsodium's signature check
    /// refuses a small-order Ed25519 key.
    package init(uncheckedText text: String) throws(MemberKeyError) {
        let bytes: [UInt8]
        do { bytes = try Bech32m.decode(Array(text.utf8), prefix: Self.textPrefix) } catch {
            throw MemberKeyError.from(error, expected: Self.textPrefix)
        }
        guard let v = bytes.first else { throw .malformed("it has the wrong length") }
        guard v == Self.version else { throw .unsupportedVersion(v) }
        guard bytes.count == Self.payloadLength else { throw .malformed("it has the wrong length") }
        boxKey = Array(bytes[1..<33])
        signKey = Array(bytes[33..<65])
    }

    /// The 65-byte payload.
    public var payload: [UInt8] { [Self.version] + boxKey + signKey }

    /// The one-line text form, `coffer1…` (117 characters).
    public var text: String { Bech32m.encode(prefix: Self.textPrefix, bytes: payload) }

    /// Whether `signature` (64 bytes) is this identity's Ed25519 signature
    /// of `message`.
    public func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        Self.isValidSignature(signature, of: message, signKey: signKey)
    }

    /// Whether `signature` (64 bytes) is the Ed25519 signature of `message`
    /// by the key `signKey` (32 bytes; a small-order or malformed key
    /// verifies nothing: libsodium refuses it).
    public static func isValidSignature(_ signature: [UInt8], of message: [UInt8], signKey: [UInt8]) -> Bool {
        Sodium.ensure()
        guard signature.count == Int(crypto_sign_BYTES), signKey.count == 32 else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), signKey) == 0
    }

    /// `prefix || secret` sealed to this identity (`crypto_box_seal`), in
    /// guarded memory until sealed: `prefix` binds what the secret is for
    /// (a vault's master key: docs/bundle-format.md §Format 5).
    /// Throws ``MemberKeyError/weakKey(_:)`` for a low-order X25519 key
    /// (possible only for a key made with ``init(uncheckedText:)``).
    public func seal(_ secret: SecretBytes, prefix: [UInt8]) throws(MemberKeyError) -> [UInt8] {
        guard let box = sealIfStrong(Self.joined(prefix, secret)) else {
            throw .weakKey("its encryption key is a weak (low-order) point")
        }
        return box
    }

    /// ``seal(_:prefix:)`` to each of `keys`, in order, from one guarded
    /// copy of `prefix || secret` (a guarded allocation costs a few system
    /// calls; an export seals to up to 50 members): nil at the index of a
    /// weak key.
    public static func seal(_ secret: SecretBytes, prefix: [UInt8], toEach keys: [MemberPublicKey]) -> [[UInt8]?] {
        let plaintext = joined(prefix, secret)
        return keys.map { $0.sealIfStrong(plaintext) }
    }

    private static func joined(_ prefix: [UInt8], _ secret: SecretBytes) -> SecretBytes {
        SecretBytes(count: prefix.count + secret.count) { out in
            prefix.withUnsafeBytes { out.copyMemory(from: $0) }
            secret.withBytes { s in
                if s.count > 0 { (out.baseAddress! + prefix.count).copyMemory(from: s.baseAddress!, byteCount: s.count) }
            }
        }
    }

    func sealIfStrong(_ secret: SecretBytes) -> [UInt8]? {
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: secret.count + crypto_box_sealbytes())
        let rc = secret.withBytes { m in
            crypto_box_seal(&out, m.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(secret.count), boxKey)
        }
        return rc == 0 ? out : nil
    }

    /// ``seal(_:prefix:)`` with the ephemeral key pair made from
    /// `ephemeralSeed` (32 bytes, `crypto_box_seed_keypair`): only for test
    /// vectors, which must be reproducible. The same construction as
    /// libsodium's `crypto_box_seal` (ephemeral public key ‖
    /// `crypto_box_easy` with the nonce BLAKE2b-192(ephemeral pk ‖ pk)),
    /// built from libsodium's own calls, so `crypto_box_seal_open` opens it.
    package func seal(_ secret: SecretBytes, prefix: [UInt8], ephemeralSeed: [UInt8]) -> [UInt8] {
        precondition(ephemeralSeed.count == 32)
        var epk = [UInt8](repeating: 0, count: 32)
        var esk = [UInt8](repeating: 0, count: 32)
        Sodium.mustSucceed(crypto_box_seed_keypair(&epk, &esk, ephemeralSeed), "crypto_box_seed_keypair")
        var nonce = [UInt8](repeating: 0, count: 24)
        let input = epk + boxKey
        Sodium.mustSucceed(crypto_generichash(&nonce, 24, input, UInt64(input.count), nil, 0), "crypto_generichash")
        var plain = prefix + secret.revealedBytes()
        var out = [UInt8](repeating: 0, count: plain.count + 16)
        Sodium.mustSucceed(crypto_box_easy(&out, plain, UInt64(plain.count), nonce, boxKey, esk), "crypto_box_easy")
        Sodium.memzero(&esk, 32)
        Sodium.memzero(&plain, plain.count)
        return epk + out
    }

    /// `secret` sealed to this identity (`crypto_box_seal`: an ephemeral
    /// X25519 key, XSalsa20-Poly1305): 48 bytes longer than `secret`.
    public func seal(_ secret: SecretBytes) throws(MemberKeyError) -> [UInt8] {
        guard let box = sealIfStrong(secret) else { throw .weakKey("its encryption key is a weak (low-order) point") }
        return box
    }
}

/// A member's secret identity: the X25519 secret key and the Ed25519 key
/// pair, in guarded memory. Written as `coffer-secret1…`
/// (docs/sharing.md, "Identity encoding"), which holds the X25519 secret
/// key and the Ed25519 seed.
public final class MemberSecretKey: Sendable {
    /// The Bech32m prefix of a secret identity.
    public static let textPrefix = "coffer-secret"
    static let version: UInt8 = 1

    /// X25519 secret key (32) || Ed25519 secret key (64: seed || public key).
    private let keys: SecretBytes
    /// The public half.
    public let publicKey: MemberPublicKey

    private init(keys: SecretBytes) throws(MemberKeyError) {
        var box = [UInt8](repeating: 0, count: 32)
        var sign = [UInt8](repeating: 0, count: 32)
        keys.withBytes { k in
            let p = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            _ = crypto_scalarmult_base(&box, p)
            sign = Array(k[64..<96])
        }
        self.keys = keys
        publicKey = try MemberPublicKey(boxKey: box, signKey: sign)
    }

    /// A new identity from the system's random generator.
    public static func generate() -> MemberSecretKey {
        Sodium.ensure()
        let seed = SecretBytes.random(count: 64)
        // Both halves from fresh randomness: the X25519 key is 32 random
        // bytes (libsodium's crypto_box_keypair does the same), the
        // Ed25519 key the seed's key pair.
        guard let key = try? fromSeeds(seed) else {
            // A random X25519 secret key never has a low-order public key.
            preconditionFailure("libsodium made an unusable key pair")
        }
        return key
    }

    /// The key from 64 bytes: X25519 secret key || Ed25519 seed.
    static func fromSeeds(_ seeds: SecretBytes) throws(MemberKeyError) -> MemberSecretKey {
        let keys = SecretBytes(count: 96) { out in
            seeds.withBytes { s in
                let o = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let si = s.baseAddress!.assumingMemoryBound(to: UInt8.self)
                o.update(from: si, count: 32)
                var pk = [UInt8](repeating: 0, count: 32)
                _ = crypto_sign_seed_keypair(&pk, o + 32, si + 32)
            }
        }
        return try MemberSecretKey(keys: keys)
    }

    /// Parses `coffer-secret1…` held in guarded memory (surrounding white
    /// space ignored).
    public convenience init(text: SecretBytes) throws(MemberKeyError) {
        let parsed: Result<SecretBytes, MemberKeyError> = text.withBytes { raw in
            var lo = 0
            var hi = raw.count
            let space: Set<UInt8> = [0x20, 0x09, 0x0a, 0x0d]
            while lo < hi, space.contains(raw[lo]) { lo += 1 }
            while hi > lo, space.contains(raw[hi - 1]) { hi -= 1 }
            guard hi > lo else { return .failure(.malformed("it is empty")) }
            var bytes: [UInt8]
            do throws(Bech32m.Failure) { bytes = try Bech32m.decode(raw[lo..<hi], prefix: Self.textPrefix) } catch {
                return .failure(MemberKeyError.from(error, expected: Self.textPrefix))
            }
            defer { Bech32m.wipe(&bytes) }
            guard let v = bytes.first else { return .failure(.malformed("it has the wrong length")) }
            guard v == Self.version else { return .failure(.unsupportedVersion(v)) }
            guard bytes.count == 65 else { return .failure(.malformed("it has the wrong length")) }
            return .success(
                SecretBytes(count: 64) { out in
                    bytes.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[1..<65])) }
                })
        }
        let seeds = try parsed.get()
        let made = try MemberSecretKey.fromSeeds(seeds)
        try self.init(keys: made.keys)
    }

    /// The text form, `coffer-secret1…`, in guarded memory.
    public func secretText() -> SecretBytes {
        var payload = [UInt8](repeating: 0, count: 65)
        payload[0] = Self.version
        keys.withBytes { k in
            for i in 0..<32 { payload[1 + i] = k[i] }
            for i in 0..<32 { payload[33 + i] = k[32 + i] }
        }
        var text = Array(Bech32m.encode(prefix: Self.textPrefix, bytes: payload).utf8)
        Bech32m.wipe(&payload)
        return SecretBytes(consuming: &text)
    }

    /// The Ed25519 signature (64 bytes) of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var sig = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        let rc = keys.withBytes { k in
            crypto_sign_detached(&sig, nil, message, UInt64(message.count), k.baseAddress!.assumingMemoryBound(to: UInt8.self) + 32)
        }
        Sodium.mustSucceed(rc, "crypto_sign_detached")
        return sig
    }

    /// Opens a box made by ``MemberPublicKey/seal(_:prefix:)``: the clear
    /// `prefix` (its first `prefixLength` bytes) and the secret after it,
    /// in guarded memory.
    public func openSealed(_ box: [UInt8], prefixLength: Int) throws(CryptoError) -> (prefix: [UInt8], secret: SecretBytes) {
        let joined = try openSealed(box)
        guard joined.count >= prefixLength else { throw .malformedInput("the sealed box is shorter than its prefix") }
        return joined.withBytes { j in
            let prefix = Array(j[0..<prefixLength])
            let secret = SecretBytes(count: j.count - prefixLength) { out in
                if out.count > 0 { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: j[prefixLength...])) }
            }
            return (prefix, secret)
        }
    }

    /// Opens a box sealed to this identity (``MemberPublicKey/seal(_:)``).
    public func openSealed(_ box: [UInt8]) throws(CryptoError) -> SecretBytes {
        let overhead = crypto_box_sealbytes()
        guard box.count >= overhead else { throw .authenticationFailed }
        let n = box.count - overhead
        var ok = false
        let out = SecretBytes(count: n) { m in
            keys.withBytes { k in
                var pk = publicKey.boxKey
                ok =
                    crypto_box_seal_open(
                        m.baseAddress!.assumingMemoryBound(to: UInt8.self), box, UInt64(box.count), &pk,
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
        guard ok else { throw .authenticationFailed }
        return out
    }
}

/// Why an identity file (docs/sharing.md, "Identity files") cannot be read.
package enum IdentityFileError: Error, Equatable, Sendable {
    case notUTF8
    case noIdentity
    /// A second identity line, at this 1-based line number.
    case moreThanOne(line: Int)
    case invalid(MemberKeyError)
}

extension MemberSecretKey {
    /// Parses an identity file held in guarded memory: UTF-8 lines; a line
    /// starting with `#` is a comment, and `# name: N` gives the name
    /// (returned as written); blank lines are ignored; exactly one other
    /// line holds `coffer-secret1…`.
    package static func parseIdentityFile(_ raw: SecretBytes) throws(IdentityFileError) -> (name: String?, key: MemberSecretKey) {
        var name: String?
        let found: Result<SecretBytes, IdentityFileError> = raw.withBytes { b in
            guard String(validating: b, as: UTF8.self) != nil else { return .failure(.notUTF8) }
            var secret: SecretBytes?
            var lineNumber = 0
            var start = 0
            while start < b.count {
                var end = start
                while end < b.count, b[end] != 0x0a { end += 1 }
                lineNumber += 1
                var lo = start
                var hi = end
                while lo < hi, b[lo] == 0x20 || b[lo] == 0x09 { lo += 1 }
                while hi > lo, b[hi - 1] == 0x20 || b[hi - 1] == 0x09 || b[hi - 1] == 0x0d { hi -= 1 }
                start = end + 1
                if lo == hi { continue }
                if b[lo] == UInt8(ascii: "#") {
                    var c = lo + 1
                    while c < hi, b[c] == 0x20 { c += 1 }
                    let label = Array("name:".utf8)
                    if hi - c >= label.count, Array(b[c..<(c + label.count)]) == label {
                        var v = c + label.count
                        while v < hi, b[v] == 0x20 { v += 1 }
                        name = String(decoding: b[v..<hi], as: UTF8.self)
                    }
                    continue
                }
                guard secret == nil else { return .failure(.moreThanOne(line: lineNumber)) }
                secret = SecretBytes(count: hi - lo) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[lo..<hi])) }
            }
            guard let secret else { return .failure(.noIdentity) }
            return .success(secret)
        }
        let text = try found.get()
        do { return (name, try MemberSecretKey(text: text)) } catch { throw .invalid(error) }
    }
}
