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

extension Random {
    /// A uniformly random element of a non-empty collection (at most
    /// 2^32 elements), through `randombytes_uniform`: no modulo bias.
    public static func element<C: RandomAccessCollection>(of c: C) -> C.Element where C.Index == Int {
        let i = Int(uniform(UInt32(truncatingIfNeeded: c.count)))
        return c[c.startIndex + i]
    }
}
