import Crypto

/// HMAC with the hash functions TOTP (RFC 6238) allows. libsodium has
/// HMAC-SHA-256/512 but no SHA-1, so all three come from swift-crypto,
/// never from a hand-written hash.
public enum HMACAlgorithm: String, Sendable, CaseIterable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    /// HMAC of `message` under `key`.
    public func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let k = SymmetricKey(data: key)
        switch self {
        case .sha1: return Array(Crypto.HMAC<Insecure.SHA1>.authenticationCode(for: message, using: k))
        case .sha256: return Array(Crypto.HMAC<SHA256>.authenticationCode(for: message, using: k))
        case .sha512: return Array(Crypto.HMAC<SHA512>.authenticationCode(for: message, using: k))
        }
    }
}
