internal import CSodium

/// libsodium's `crypto_secretstream_xchacha20poly1305`: a sequence of
/// authenticated messages, each tagged, where truncation, reordering and
/// dropping are detected. The last message carries the FINAL tag.
public enum SecretStream {
    /// Size of the stream header written before the first message.
    public static let headerLength = 24
    /// Bytes each message gains (1 tag byte + 16-byte MAC).
    public static let overhead = 17
    public static let keyLength = 32

    /// Message tags.
    public enum Tag: UInt8, Sendable {
        case message = 0
        case push = 1
        case rekey = 2
        case final = 3
    }

    /// Encrypting side of a stream. Not thread-safe: one writer, one thread.
    public final class Writer {
        private let state: UnsafeMutableRawPointer
        /// The 24-byte header to write before the first message.
        public let header: [UInt8]
        private var finished = false

        /// Starts a stream under `key` (32 bytes).
        public init(key: SecretBytes) {
            precondition(key.count == keyLength)
            Sodium.ensure()
            state = Sodium.mallocOrTrap(crypto_secretstream_xchacha20poly1305_statebytes())
            var h = [UInt8](repeating: 0, count: headerLength)
            let st = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
            // Always 0 in libsodium (a random header, an HChaCha20 call).
            let rc = h.withUnsafeMutableBufferPointer { hp in
                key.withBytes { k in
                    crypto_secretstream_xchacha20poly1305_init_push(
                        st, hp.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            Sodium.mustSucceed(rc, "crypto_secretstream_xchacha20poly1305_init_push")
            header = h
        }

        /// Starts a stream under `key` with a caller-chosen 24-byte
        /// header. Only for deterministic test vectors: a header must never
        /// repeat under one key. libsodium's `init_pull` derives exactly the
        /// state `init_push` would derive from the same header, so the
        /// messages pushed are ordinary stream messages.
        package init(key: SecretBytes, deterministicHeader: [UInt8]) {
            precondition(key.count == keyLength && deterministicHeader.count == headerLength)
            Sodium.ensure()
            state = Sodium.mallocOrTrap(crypto_secretstream_xchacha20poly1305_statebytes())
            let st = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
            // Always 0 in libsodium (it checks nothing: a header is any 24 bytes).
            let rc = deterministicHeader.withUnsafeBufferPointer { hp in
                key.withBytes { k in
                    crypto_secretstream_xchacha20poly1305_init_pull(
                        st, hp.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            Sodium.mustSucceed(rc, "crypto_secretstream_xchacha20poly1305_init_pull")
            header = deterministicHeader
        }

        deinit { sodium_free(state) }

        /// Encrypts one message. After a `.final` message the writer refuses
        /// more.
        public func push(_ message: [UInt8], tag: Tag = .message, associatedData: [UInt8] = []) -> [UInt8] {
            precondition(!finished, "secretstream: push after FINAL")
            if tag == .final { finished = true }
            var out = [UInt8](repeating: 0, count: message.count + overhead)
            let st = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
            // Always 0 in libsodium: a message above its 256 GiB limit
            // aborts inside libsodium (sodium_misuse) rather than failing.
            let rc = out.withUnsafeMutableBufferPointer { o in
                message.withUnsafeBufferPointer { m in
                    associatedData.withUnsafeBufferPointer { ad in
                        var clen: UInt64 = 0
                        return crypto_secretstream_xchacha20poly1305_push(
                            st, o.baseAddress!, &clen, m.baseAddress, UInt64(m.count),
                            ad.baseAddress, UInt64(ad.count), tag.rawValue)
                    }
                }
            }
            Sodium.mustSucceed(rc, "crypto_secretstream_xchacha20poly1305_push")
            return out
        }
    }

    /// Decrypting side of a stream.
    public final class Reader {
        private let state: UnsafeMutableRawPointer
        /// Whether a FINAL message has been read.
        public private(set) var finished = false

        /// Starts reading a stream whose 24-byte header is `header`.
        public init(key: SecretBytes, header: [UInt8]) throws(CryptoError) {
            precondition(key.count == keyLength)
            Sodium.ensure()
            guard header.count == headerLength else { throw .malformedInput("stream header") }
            state = Sodium.mallocOrTrap(crypto_secretstream_xchacha20poly1305_statebytes())
            let st = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
            let rc = header.withUnsafeBufferPointer { hp in
                key.withBytes { k in
                    crypto_secretstream_xchacha20poly1305_init_pull(
                        st, hp.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            guard rc == 0 else {
                sodium_free(state)
                throw .authenticationFailed
            }
        }

        deinit { sodium_free(state) }

        /// Decrypts the next message. Throws if it fails authentication or
        /// comes after the FINAL message.
        public func pull(_ ciphertext: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> (message: [UInt8], tag: Tag) {
            guard !finished else { throw .malformedInput("data after the final message") }
            guard ciphertext.count >= overhead else { throw .authenticationFailed }
            var out = [UInt8](repeating: 0, count: ciphertext.count - overhead)
            var tag: UInt8 = 0
            let st = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
            let rc = out.withUnsafeMutableBufferPointer { o in
                ciphertext.withUnsafeBufferPointer { c in
                    associatedData.withUnsafeBufferPointer { ad in
                        var mlen: UInt64 = 0
                        return crypto_secretstream_xchacha20poly1305_pull(
                            st, o.baseAddress, &mlen, &tag, c.baseAddress!, UInt64(c.count),
                            ad.baseAddress, UInt64(ad.count))
                    }
                }
            }
            guard rc == 0, let t = Tag(rawValue: tag) else { throw .authenticationFailed }
            if t == .final { finished = true }
            return (out, t)
        }
    }
}
