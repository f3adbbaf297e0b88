/// Errors from the cryptographic layer. Deliberately small: a failed
/// decryption never says which byte or which check failed.
public enum CryptoError: Error, Equatable, Sendable {
    /// A ciphertext or stream failed authentication: wrong key, or the data
    /// was corrupted or modified.
    case authenticationFailed
    /// The key-derivation function rejected its parameters or ran out of
    /// memory. The associated text is libargon2's own description.
    case kdfFailed(String)
    /// libsodium could not be initialised or could not allocate guarded
    /// memory.
    case unavailable(String)
    /// Input had the wrong shape (a truncated box, a key of the wrong size).
    case malformedInput(String)
}

extension CryptoError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .authenticationFailed: return "authentication failed"
        case .kdfFailed(let why): return "key derivation failed: \(why)"
        case .unavailable(let why): return "cryptography unavailable: \(why)"
        case .malformedInput(let why): return "malformed input: \(why)"
        }
    }
}
