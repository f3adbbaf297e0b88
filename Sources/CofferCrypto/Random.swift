internal import CSodium

/// The system CSPRNG through libsodium's `randombytes_buf`.
public enum Random {
    /// `count` random bytes (not secret: ids, salts, nonces).
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: count)
        if count > 0 {
            out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        }
        return out
    }

    /// A uniformly random integer in `0..<upperBound`.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ensure()
        return randombytes_uniform(upperBound)
    }
}
