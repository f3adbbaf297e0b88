/// A summary file (`coffer summary --out FILE`): what a replica has seen,
/// so another replica can export only the rest (docs/bundle-format.md
/// §Summary files).
///
/// ```
/// 0   8   magic "COFFERS\n"
/// 8   2   version (u16) = 1
/// 10  16  vault id
/// 26  16  replica id
/// 42  8   created at (i64 ms)
/// 50  …   summary vector
/// ```
/// It is not encrypted or authenticated: it reveals only ids and counters,
/// and a forged one can at worst produce a delta the receiver refuses.
public struct BundleSummaryFile: Sendable, Equatable {
    public var vaultID: VaultID
    public var replicaID: ReplicaID
    public var createdAt: Int64
    public var vector: VersionVector

    public init(vaultID: VaultID, replicaID: ReplicaID, createdAt: Int64, vector: VersionVector) {
        self.vaultID = vaultID
        self.replicaID = replicaID
        self.createdAt = createdAt
        self.vector = vector
    }

    /// Longest summary file accepted.
    public static let maxLength = 52 + 24 * 65535

    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.bytes(BundleFormat.summaryMagic)
        w.u16(BundleFormat.summaryVersion)
        w.bytes(vaultID.bytes)
        w.bytes(replicaID.bytes)
        w.i64(createdAt)
        w.bytes(vector.encoded)
        return w.data
    }

    public init(decoding bytes: [UInt8]) throws(BundleError) {
        if bytes.isEmpty { throw .empty }
        guard bytes.starts(with: BundleFormat.summaryMagic) else {
            throw .notABundle(looksLike: bytes.starts(with: BundleFormat.magic) ? "a Coffer bundle" : BundleSniffer.describe(Array(bytes.prefix(64))))
        }
        var r = ByteReader(bytes)
        do {
            _ = try r.bytes(8)
            let v = try r.u16()
            guard v == BundleFormat.summaryVersion else { throw BundleError.unsupportedVersion(v) }
            vaultID = VaultID(bytes: try r.bytes(16))!
            replicaID = ReplicaID(bytes: try r.bytes(16))!
            createdAt = try r.i64()
            vector = try VersionVector(reading: &r)
        } catch let e as BundleError {
            throw e
        } catch FormatError.truncated {
            throw .truncated(part: "summary")
        } catch {
            throw .malformedHeader("\(error)")
        }
        guard r.isAtEnd else { throw .trailingData }
        try BundleValidation.check(summaryFile: self)
    }
}
