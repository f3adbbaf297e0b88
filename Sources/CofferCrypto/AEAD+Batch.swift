internal import CSodium

extension AEAD {
    /// Seals many boxes under one key for bulk work (an import's item
    /// records): the same boxes as ``AEAD/seal(_:key:associatedData:)``,
    /// each with its own random nonce, but the nonces come from one
    /// `randombytes_buf` call per 64 boxes instead of one per box (on
    /// Linux each call is at least one `getrandom` system call, of at most
    /// 256 bytes: 100,000 calls on a 100,000-item clone before, about
    /// 9,400 now). The buffered nonces are not secret; a nonce is handed
    /// out once and the buffer is refilled only when used up.
    /// Used by one thread at a time.
    public final class BatchSealer: @unchecked Sendable {
        static let noncesPerDraw = 64
        private let key: SecretBytes
        private var nonces: [UInt8]
        private var next: Int

        public init(key: SecretBytes) {
            self.key = key
            nonces = [UInt8](repeating: 0, count: Self.noncesPerDraw * nonceLength)
            next = Self.noncesPerDraw
        }

        /// Encrypts `plaintext`, binding `associatedData`: a box that
        /// ``AEAD/open(_:key:associatedData:)`` opens.
        public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8] {
            if next == Self.noncesPerDraw {
                Sodium.ensure()
                nonces.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
                next = 0
            }
            let start = next * nonceLength
            next += 1
            return AEAD.seal(plaintext, key: key, associatedData: associatedData) { out in
                nonces.withUnsafeBufferPointer { out.update(from: $0.baseAddress! + start, count: nonceLength) }
            }
        }
    }
}
