internal import CSodium

/// Sub-keys derived from the vault master key with libsodium's
/// `crypto_kdf_derive_from_key` (BLAKE2b-based). Every purpose has its own
/// numeric id under one 8-byte context, listed in docs/key-hierarchy.md.
public enum SubKey {
    /// The 8-byte context string for every Coffer sub-key.
    public static let context = "coffer01"

    /// Derives a 32-byte sub-key for `id` from `master` (32 bytes).
    public static func derive(from master: SecretBytes, id: UInt64, length: Int = 32) -> SecretBytes {
        precondition(master.count == 32)
        Sodium.ensure()
        let ctx = Array(context.utf8).map { CChar(bitPattern: $0) }
        return SecretBytes(count: length) { out in
            master.withBytes { k in
                _ = crypto_kdf_derive_from_key(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, id, ctx,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }
}

/// Keyed BLAKE2b (`crypto_generichash`), used for the name index and for
/// opaque field identifiers.
public enum KeyedHash {
    /// BLAKE2b of `message` keyed with `key`, `length` bytes (16...64).
    public static func hash(_ message: some Collection<UInt8>, key: SecretBytes, length: Int = 32) -> [UInt8] {
        precondition((16...64).contains(length))
        Sodium.ensure()
        let message = Array(message)
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBufferPointer { o in
            message.withUnsafeBufferPointer { m in
                key.withBytes { k in
                    _ = crypto_generichash(
                        o.baseAddress!, length, m.baseAddress, UInt64(m.count),
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        return out
    }

    /// Unkeyed BLAKE2b, for fingerprints of non-secret data.
    public static func digest(_ message: some Collection<UInt8>, length: Int = 32) -> [UInt8] {
        let message = Array(message)
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { o in message.withUnsafeBytes { digest($0, into: o) } }
        return out
    }

    /// Unkeyed BLAKE2b of `message` into `out` (16 to 64 bytes), with no
    /// allocation: for digests built in a caller's buffer.
    public static func digest(_ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        precondition((16...64).contains(out.count))
        Sodium.ensure()
        _ = crypto_generichash(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count), nil, 0)
    }

    /// Derives a 32-byte key from a secret and a label with keyed BLAKE2b:
    /// `BLAKE2b-256(key = secret, message = label)`, into guarded memory.
    public static func deriveKey(from secret: SecretBytes, label: [UInt8]) -> SecretBytes {
        Sodium.ensure()
        return SecretBytes(count: 32) { out in
            label.withUnsafeBufferPointer { m in
                secret.withBytes { k in
                    _ = crypto_generichash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                        m.baseAddress, UInt64(m.count),
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
    }
}

/// Keyed BLAKE2b with the key block absorbed once: each ``hash(_:)``
/// copies the prepared state and hashes only the message (half the work
/// of ``KeyedHash/hash(_:key:length:)`` for short messages, and no lock or
/// `mprotect` pair per call). The prepared state is key material: it and
/// the working copy live in `sodium_malloc` memory, wiped when freed. One
/// thread at a time.
public final class PreparedKeyedHash: @unchecked Sendable {
    private let state: UnsafeMutableRawPointer
    private let scratch: UnsafeMutableRawPointer
    private let digest: UnsafeMutableRawPointer
    private let stateSize: Int
    public let length: Int

    public init(key: SecretBytes, length: Int = 32) {
        precondition((16...64).contains(length))
        Sodium.ensure()
        self.length = length
        // A multiple of 64: sodium_malloc then returns 64-byte-aligned memory
        // (it places the region at the end of a page).
        stateSize = (crypto_generichash_statebytes() + 63) / 64 * 64
        guard let p = sodium_malloc(stateSize), let q = sodium_malloc(stateSize), let d = sodium_malloc(64) else {
            fatalError("sodium_malloc failed")
        }
        state = p
        scratch = q
        digest = d
        key.withBytes { k in
            _ = crypto_generichash_init(
                OpaquePointer(state), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, length)
        }
    }

    deinit {
        sodium_free(state)
        sodium_free(scratch)
        sodium_free(digest)
    }

    public func hash(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        scratch.copyMemory(from: state, byteCount: stateSize)
        message.withUnsafeBufferPointer { m in
            _ = crypto_generichash_update(OpaquePointer(scratch), m.baseAddress, UInt64(m.count))
        }
        out.withUnsafeMutableBufferPointer { o in
            _ = crypto_generichash_final(OpaquePointer(scratch), o.baseAddress!, length)
        }
        return out
    }

    /// Hashes `message` and hands the digest to `body` without allocating
    /// (the digest is valid only inside `body`: the next call overwrites
    /// it). For bulk hashing (the vault MAC's terms).
    public func hash<R>(_ message: [UInt8], _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        message.withUnsafeBufferPointer { m in hash(m, body) }
    }

    /// The same for bytes in memory (a term written into a reused buffer).
    public func hash<R>(_ message: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        scratch.copyMemory(from: state, byteCount: stateSize)
        _ = crypto_generichash_update(OpaquePointer(scratch), message.baseAddress, UInt64(message.count))
        _ = crypto_generichash_final(OpaquePointer(scratch), digest.assumingMemoryBound(to: UInt8.self), length)
        return body(UnsafeBufferPointer(start: digest.assumingMemoryBound(to: UInt8.self), count: length))
    }
}
