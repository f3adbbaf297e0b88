internal import CSodium

/// Sub-keys derived from the vault master key with libsodium's
/// `crypto_kdf_derive_from_key` (BLAKE2b-based). Every purpose has its own
/// numeric id under one 8-byte context, listed in docs/key-hierarchy.md.
public enum SubKey {
    /// The 8-byte context string for every Coffer sub-key.
    public static let context = "coffer01"

    /// Derives a sub-key of `length` bytes (16...64, libsodium's range;
    /// another length stops the process) for `id` from `master` (32 bytes).
    public static func derive(from master: SecretBytes, id: UInt64, length: Int = 32) -> SecretBytes {
        precondition(master.count == 32)
        precondition((16...64).contains(length), "SubKey.derive: a sub-key has 16 to 64 bytes, not \(length)")
        Sodium.ensure()
        let ctx = Array(context.utf8).map { CChar(bitPattern: $0) }
        return SecretBytes(count: length) { out in
            // Fails (-1, EINVAL) only for a length outside 16...64, checked above.
            let rc = master.withBytes { k in
                crypto_kdf_derive_from_key(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, id, ctx,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            Sodium.mustSucceed(rc, "crypto_kdf_derive_from_key")
        }
    }
}

/// Keyed BLAKE2b (`crypto_generichash`), used for the name index and for
/// opaque field identifiers.
public enum KeyedHash {
    /// BLAKE2b of `message` keyed with `key` (at most 64 bytes), `length`
    /// bytes (16...64). Other lengths stop the process.
    public static func hash(_ message: some Collection<UInt8>, key: SecretBytes, length: Int = 32) -> [UInt8] {
        precondition((16...64).contains(length))
        precondition(key.count <= maxKeyLength, "KeyedHash: a BLAKE2b key has at most 64 bytes, not \(key.count)")
        Sodium.ensure()
        let message = Array(message)
        var out = [UInt8](repeating: 0, count: length)
        // Fails only for a length or key length out of range, checked above.
        let rc = out.withUnsafeMutableBufferPointer { o in
            message.withUnsafeBufferPointer { m in
                key.withBytes { k in
                    crypto_generichash(
                        o.baseAddress!, length, m.baseAddress, UInt64(m.count),
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        Sodium.mustSucceed(rc, "crypto_generichash")
        return out
    }

    /// The longest BLAKE2b key (`crypto_generichash_KEYBYTES_MAX`).
    static let maxKeyLength = 64

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
        // Unkeyed, the length checked above: cannot fail.
        let rc = crypto_generichash(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count), nil, 0)
        Sodium.mustSucceed(rc, "crypto_generichash")
    }

    /// Derives a 32-byte key from a secret and a label with keyed BLAKE2b:
    /// `BLAKE2b-256(key = secret, message = label)`, into guarded memory.
    /// `secret` has at most 64 bytes (a longer one stops the process).
    public static func deriveKey(from secret: SecretBytes, label: [UInt8]) -> SecretBytes {
        precondition(secret.count <= maxKeyLength, "KeyedHash: a BLAKE2b key has at most 64 bytes, not \(secret.count)")
        Sodium.ensure()
        return SecretBytes(count: 32) { out in
            // Fails only for a key longer than 64 bytes, checked above.
            let rc = label.withUnsafeBufferPointer { m in
                secret.withBytes { k in
                    crypto_generichash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                        m.baseAddress, UInt64(m.count),
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
            Sodium.mustSucceed(rc, "crypto_generichash")
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

    /// Prepares hashing under `key` (at most 64 bytes), `length`-byte
    /// digests (16...64); other lengths stop the process.
    public init(key: SecretBytes, length: Int = 32) {
        precondition((16...64).contains(length))
        precondition(key.count <= KeyedHash.maxKeyLength, "PreparedKeyedHash: a BLAKE2b key has at most 64 bytes, not \(key.count)")
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
        // Fails only for a length or key length out of range, checked above.
        let rc = key.withBytes { k in
            crypto_generichash_init(
                OpaquePointer(state), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, length)
        }
        Sodium.mustSucceed(rc, "crypto_generichash_init")
    }

    deinit {
        sodium_free(state)
        sodium_free(scratch)
        sodium_free(digest)
    }

    public func hash(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        scratch.copyMemory(from: state, byteCount: stateSize)
        // update always returns 0; final fails only on a state already
        // finalised, and scratch is a fresh copy of the prepared state.
        let updated = message.withUnsafeBufferPointer { m in
            crypto_generichash_update(OpaquePointer(scratch), m.baseAddress, UInt64(m.count))
        }
        Sodium.mustSucceed(updated, "crypto_generichash_update")
        let finished = out.withUnsafeMutableBufferPointer { o in
            crypto_generichash_final(OpaquePointer(scratch), o.baseAddress!, length)
        }
        Sodium.mustSucceed(finished, "crypto_generichash_final")
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
        // As in hash(_:) above: cannot fail on a fresh copy of the state.
        Sodium.mustSucceed(
            crypto_generichash_update(OpaquePointer(scratch), message.baseAddress, UInt64(message.count)),
            "crypto_generichash_update")
        Sodium.mustSucceed(
            crypto_generichash_final(OpaquePointer(scratch), digest.assumingMemoryBound(to: UInt8.self), length),
            "crypto_generichash_final")
        return body(UnsafeBufferPointer(start: digest.assumingMemoryBound(to: UInt8.self), count: length))
    }
}

/// Unkeyed BLAKE2b-512 (`crypto_generichash`, 64-byte output) of a byte
/// stream fed piece by piece: what a signed bundle's signature covers
/// (docs/bundle-format.md §Format 6), hashed in the pass that writes or
/// reads the file. Not for secrets (its state is ordinary memory).
public final class StreamingDigest: @unchecked Sendable {
    /// The digest length: 64 bytes.
    public static let length = 64
    private let state: UnsafeMutableRawPointer
    private var finished = false

    public init() {
        Sodium.ensure()
        state = UnsafeMutableRawPointer.allocate(byteCount: max(crypto_generichash_statebytes(), 64), alignment: 64)
        // Unkeyed, a length in range: cannot fail.
        Sodium.mustSucceed(crypto_generichash_init(OpaquePointer(state), nil, 0, Self.length), "crypto_generichash_init")
    }

    deinit { state.deallocate() }

    /// Absorbs `bytes`.
    public func update(_ bytes: some Collection<UInt8>) {
        precondition(!finished, "StreamingDigest: update after finish")
        let done = bytes.withContiguousStorageIfAvailable { b in
            crypto_generichash_update(OpaquePointer(state), b.baseAddress, UInt64(b.count))
        }
        // update always returns 0.
        if let done { Sodium.mustSucceed(done, "crypto_generichash_update") } else { update(Array(bytes)) }
    }

    /// The 64-byte digest (once).
    public func finish() -> [UInt8] {
        precondition(!finished, "StreamingDigest: finish called twice")
        finished = true
        var out = [UInt8](repeating: 0, count: Self.length)
        Sodium.mustSucceed(crypto_generichash_final(OpaquePointer(state), &out, Self.length), "crypto_generichash_final")
        return out
    }
}
