internal import CArgon2
internal import CSodium
import Crypto
import Foundation
import _CryptoExtras

/// The primitives of KeePass's KDBX 3.1 and 4.x files
/// (docs/import-export.md#kdbx), for CofferInterop's reader and writer:
/// SHA-256/512, HMAC-SHA-256, ChaCha20 and Salsa20 from libsodium; Argon2d
/// and Argon2id from libargon2; AES-256 (CBC for the payload, and the
/// AES-KDF's ECB rounds, run as CBC over zero blocks) from swift-crypto's
/// `_CryptoExtras`, because libsodium has no AES-CBC. Nothing hand-written.
/// Keys stay in ``SecretBytes``.
public enum KDBXCrypto {
    /// SHA-256 (libsodium).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }

    /// SHA-256 of a secret, into guarded memory.
    public static func sha256(_ secret: SecretBytes) -> SecretBytes {
        Sodium.ensure()
        return SecretBytes(count: 32) { out in
            secret.withBytes { s in
                _ = crypto_hash_sha256(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), s.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(s.count))
            }
        }
    }

    /// The composite key: SHA-256 over SHA-256(password) (when there is a
    /// password) followed by the key file's 32 bytes (when there is one),
    /// as KeePass and KeePassXC build it.
    public static func compositeKey(password: SecretBytes?, keyFile: SecretBytes?) -> SecretBytes {
        Sodium.ensure()
        return SecretBytes(count: 32) { out in
            var state = crypto_hash_sha256_state()
            crypto_hash_sha256_init(&state)
            if let password {
                let hashed = sha256(password)
                hashed.withBytes { h in _ = crypto_hash_sha256_update(&state, h.baseAddress!.assumingMemoryBound(to: UInt8.self), 32) }
            }
            if let keyFile {
                keyFile.withBytes { k in
                    if k.count > 0 { _ = crypto_hash_sha256_update(&state, k.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(k.count)) }
                }
            }
            crypto_hash_sha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            sodium_memzero(&state, MemoryLayout<crypto_hash_sha256_state>.size)
        }
    }

    /// KeePass's AES-KDF: each 16-byte half of `key` encrypted `rounds`
    /// times with AES-256 (ECB) under `seed`, then SHA-256 of the result.
    /// Each half's chain E(E(…E(half))) is computed as the last block of
    /// an AES-256-CBC encryption of zero blocks with the half as the IV.
    public static func aesKDF(key: SecretBytes, seed: [UInt8], rounds: UInt64) throws(CryptoError) -> SecretBytes {
        guard key.count == 32, seed.count == 32 else { throw .malformedInput("AES-KDF needs a 32-byte key and seed") }
        let aesKey = SymmetricKey(data: seed)
        let chunkBlocks: UInt64 = 65_536
        let zeros = Data(count: Int(chunkBlocks) * 16)
        var halves = key.revealedBytes()
        defer { zeroize(&halves) }
        do {
            for h in 0..<2 {
                var block = Array(halves[h * 16..<h * 16 + 16])
                var left = rounds
                while left > 0 {
                    let n = min(left, chunkBlocks)
                    let input = n == chunkBlocks ? zeros : zeros.prefix(Int(n) * 16)
                    let out = try AES._CBC.encrypt(input, using: aesKey, iv: AES._CBC.IV(ivBytes: block), noPadding: true)
                    block = Array(out.suffix(16))
                    left -= n
                }
                halves.replaceSubrange(h * 16..<h * 16 + 16, with: block)
                zeroize(&block)
            }
        } catch {
            throw .malformedInput("AES failed: \(error)")
        }
        var result = sha256(halves)
        return SecretBytes(consuming: &result)
    }

    /// The Argon2 variant a KDBX 4 file names.
    public enum Argon2Variant: Sendable {
        case d
        case id
    }

    /// Argon2d or Argon2id with KeePass's parameters (memory in KiB,
    /// version 0x10 or 0x13, optional secret and associated data).
    public static func argon2(
        _ variant: Argon2Variant, password: SecretBytes, salt: [UInt8], iterations: UInt32, memoryKiB: UInt32, parallelism: UInt32,
        version: UInt32, secret: [UInt8] = [], associatedData: [UInt8] = []
    ) throws(CryptoError) -> SecretBytes {
        guard version == 0x10 || version == 0x13 else { throw .kdfFailed("unknown Argon2 version \(version)") }
        var rc: Int32 = 0
        let threads = min(parallelism, UInt32(max(1, min(ProcessInfo.processInfo.activeProcessorCount, 16))))
        let key = SecretBytes(count: 32) { out in
            password.withBytes { pwd in
                var s = salt
                var k = secret
                var a = associatedData
                s.withUnsafeMutableBufferPointer { sp in
                    k.withUnsafeMutableBufferPointer { kp in
                        a.withUnsafeMutableBufferPointer { ap in
                            var ctx = argon2_context(
                                out: out.baseAddress!.assumingMemoryBound(to: UInt8.self), outlen: 32,
                                pwd: UnsafeMutablePointer(mutating: pwd.baseAddress?.assumingMemoryBound(to: UInt8.self)), pwdlen: UInt32(pwd.count),
                                salt: sp.baseAddress, saltlen: UInt32(sp.count),
                                secret: kp.count > 0 ? kp.baseAddress : nil, secretlen: UInt32(kp.count),
                                ad: ap.count > 0 ? ap.baseAddress : nil, adlen: UInt32(ap.count),
                                t_cost: iterations, m_cost: memoryKiB, lanes: parallelism, threads: max(1, threads),
                                version: version, allocate_cbk: nil, free_cbk: nil, flags: 0)
                            rc = argon2_ctx(&ctx, variant == .d ? Argon2_d : Argon2_id)
                        }
                    }
                }
                zeroize(&k)
            }
        }
        guard rc == ARGON2_OK.rawValue else { throw .kdfFailed(String(cString: argon2_error_message(rc))) }
        return key
    }

    /// Overwrites an array's bytes with zeros.
    public static func zeroize(_ bytes: inout [UInt8]) {
        let n = bytes.count
        if n > 0 { bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, n) } }
    }
}

/// The keys of one KDBX file, from its master seed and the transformed
/// key: the payload cipher's key, SHA-256(seed ‖ transformed), and the
/// HMAC base key of KDBX 4, SHA-512(seed ‖ transformed ‖ 0x01).
public final class KDBXKeys: Sendable {
    let cipherKey: SecretBytes
    let hmacBase: SecretBytes

    public init(masterSeed: [UInt8], transformedKey: SecretBytes) {
        Sodium.ensure()
        cipherKey = SecretBytes(count: 32) { out in
            transformedKey.withBytes { t in
                var st = crypto_hash_sha256_state()
                crypto_hash_sha256_init(&st)
                crypto_hash_sha256_update(&st, masterSeed, UInt64(masterSeed.count))
                crypto_hash_sha256_update(&st, t.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(t.count))
                crypto_hash_sha256_final(&st, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                sodium_memzero(&st, MemoryLayout<crypto_hash_sha256_state>.size)
            }
        }
        hmacBase = SecretBytes(count: 64) { out in
            transformedKey.withBytes { t in
                var st = crypto_hash_sha512_state()
                crypto_hash_sha512_init(&st)
                crypto_hash_sha512_update(&st, masterSeed, UInt64(masterSeed.count))
                crypto_hash_sha512_update(&st, t.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(t.count))
                var one: UInt8 = 1
                crypto_hash_sha512_update(&st, &one, 1)
                crypto_hash_sha512_final(&st, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                sodium_memzero(&st, MemoryLayout<crypto_hash_sha512_state>.size)
            }
        }
    }

    /// HMAC-SHA-256 of `parts` under the key of block `index`
    /// (SHA-512(index as UInt64 LE ‖ HMAC base key)); the header's index
    /// is `UInt64.max`.
    public func hmac(index: UInt64, _ parts: [UInt8]...) -> [UInt8] {
        var blockKey = [UInt8](repeating: 0, count: 64)
        hmacBase.withBytes { base in
            var st = crypto_hash_sha512_state()
            crypto_hash_sha512_init(&st)
            var le = index.littleEndian
            withUnsafeBytes(of: &le) { _ = crypto_hash_sha512_update(&st, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
            crypto_hash_sha512_update(&st, base.baseAddress!.assumingMemoryBound(to: UInt8.self), 64)
            crypto_hash_sha512_final(&st, &blockKey)
            sodium_memzero(&st, MemoryLayout<crypto_hash_sha512_state>.size)
        }
        defer { KDBXCrypto.zeroize(&blockKey) }
        var st = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&st, blockKey, 64)
        for p in parts { crypto_auth_hmacsha256_update(&st, p, UInt64(p.count)) }
        var mac = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256_final(&st, &mac)
        sodium_memzero(&st, MemoryLayout<crypto_auth_hmacsha256_state>.size)
        return mac
    }

    /// Constant-time comparison of two MACs.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.count > 0 && sodium_memcmp(a, b, a.count) == 0
    }

    /// AES-256-CBC with PKCS#7 padding. A padding error (the usual sign
    /// of a wrong key in KDBX 3.1) is ``CryptoError/authenticationFailed``.
    public func aesCBCDecrypt(_ data: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard iv.count == 16 else { throw .malformedInput("the AES IV must be 16 bytes") }
        guard !data.isEmpty, data.count % 16 == 0 else { throw .authenticationFailed }
        let key = cipherKey.withBytes { SymmetricKey(data: $0) }
        do {
            return [UInt8](try AES._CBC.decrypt(data, using: key, iv: AES._CBC.IV(ivBytes: iv)))
        } catch {
            throw .authenticationFailed
        }
    }

    /// AES-256-CBC decryption of whole blocks without removing padding:
    /// the first blocks of a KDBX 3.1 payload (its stream start bytes),
    /// which tell a wrong key from a damaged or truncated file.
    public func aesCBCDecryptBlocks(_ data: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard iv.count == 16 else { throw .malformedInput("the AES IV must be 16 bytes") }
        guard !data.isEmpty, data.count % 16 == 0 else { throw .malformedInput("AES-CBC needs whole blocks") }
        let key = cipherKey.withBytes { SymmetricKey(data: $0) }
        do {
            return [UInt8](try AES._CBC.decrypt(data, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        } catch {
            throw .malformedInput("AES failed: \(error)")
        }
    }

    public func aesCBCEncrypt(_ data: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard iv.count == 16 else { throw .malformedInput("the AES IV must be 16 bytes") }
        let key = cipherKey.withBytes { SymmetricKey(data: $0) }
        do {
            return [UInt8](try AES._CBC.encrypt(data, using: key, iv: AES._CBC.IV(ivBytes: iv)))
        } catch {
            throw .malformedInput("AES failed: \(error)")
        }
    }

    /// ChaCha20 (RFC 8439, 96-bit nonce, counter from 0) over `data`, in
    /// place: encryption and decryption are the same.
    public func chacha20(_ data: inout [UInt8], nonce: [UInt8]) throws(CryptoError) {
        guard nonce.count == 12 else { throw .malformedInput("the ChaCha20 nonce must be 12 bytes") }
        let n = data.count
        guard n > 0 else { return }
        cipherKey.withBytes { k in
            data.withUnsafeMutableBufferPointer { d in
                _ = crypto_stream_chacha20_ietf_xor_ic(d.baseAddress!, d.baseAddress!, UInt64(n), nonce, 0, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }
}

/// The inner random stream that hides protected values (passwords) in a
/// KDBX file's XML: one key stream consumed in document order. Salsa20
/// (KDBX 3.1: key SHA-256(stream key), KeePass's fixed nonce) or ChaCha20
/// (KDBX 4: key and nonce from SHA-512(stream key)).
public final class KDBXInnerStream {
    public enum Algorithm: Sendable {
        case salsa20
        case chacha20
    }

    let algorithm: Algorithm
    let key: SecretBytes
    let nonce: [UInt8]
    var block: UInt64 = 0
    var buffer: [UInt8] = []
    var used = 0

    public init(_ algorithm: Algorithm, streamKey: [UInt8]) {
        Sodium.ensure()
        self.algorithm = algorithm
        switch algorithm {
        case .salsa20:
            var k = KDBXCrypto.sha256(streamKey)
            key = SecretBytes(consuming: &k)
            nonce = [0xE8, 0x30, 0x09, 0x4B, 0x97, 0x20, 0x5D, 0x2A]
        case .chacha20:
            var h = [UInt8](repeating: 0, count: 64)
            crypto_hash_sha512(&h, streamKey, UInt64(streamKey.count))
            var k = Array(h[0..<32])
            nonce = Array(h[32..<44])
            KDBXCrypto.zeroize(&h)
            key = SecretBytes(consuming: &k)
        }
    }

    /// XORs `bytes` with the next `bytes.count` bytes of the stream.
    public func apply(_ bytes: inout [UInt8]) {
        for i in bytes.indices {
            if used == buffer.count { refill() }
            bytes[i] ^= buffer[used]
            used += 1
        }
    }

    private func refill() {
        // 16 blocks of 64 bytes at a time.
        let count = 1024
        var out = [UInt8](repeating: 0, count: count)
        key.withBytes { k in
            let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            out.withUnsafeMutableBufferPointer { o in
                switch algorithm {
                case .salsa20:
                    _ = crypto_stream_salsa20_xor_ic(o.baseAddress!, o.baseAddress!, UInt64(count), nonce, block, kp)
                case .chacha20:
                    _ = crypto_stream_chacha20_ietf_xor_ic(o.baseAddress!, o.baseAddress!, UInt64(count), nonce, UInt32(truncatingIfNeeded: block), kp)
                }
            }
        }
        block += UInt64(count / 64)
        KDBXCrypto.zeroize(&buffer)
        buffer = out
        used = 0
    }
}
