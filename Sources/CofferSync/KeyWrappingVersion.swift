/// The version of a vault's passphrase wrapping (docs/sync.md §Passphrase
/// changes): which `coffer passwd` made the wrapping a replica holds, so that
/// the newest change reaches every replica through bundles, ordered by
/// version vector and never by wall clock.
///
/// Every `passwd` stamps the new wrapping with a dot of its own counter
/// space — `(replica, vector[replica] + 1)` — on top of the vector of the
/// wrapping it replaced. A vault that never changed its passphrase holds the
/// *initial* wrapping: the empty vector, no changer.
public struct KeyWrappingVersion: Sendable, Equatable {
    /// The passwd changes this wrapping has seen (its own included).
    public var vector: VersionVector
    /// The replica whose `passwd` made this wrapping; nil for the initial one.
    public var changedBy: ReplicaID?
    /// When that `passwd` ran (ms since 1970; informational, never compared).
    public var changedAt: Int64

    public init(vector: VersionVector, changedBy: ReplicaID?, changedAt: Int64) {
        self.vector = vector
        self.changedBy = changedBy
        self.changedAt = changedAt
    }

    /// The wrapping made by `coffer init` (or any vault before format 3).
    public static let initial = KeyWrappingVersion(vector: VersionVector(), changedBy: nil, changedAt: 0)

    public var isInitial: Bool { vector.isEmpty }

    /// The dot of the change that made this wrapping.
    public var dot: Dot? {
        guard let changedBy else { return nil }
        return Dot(replica: changedBy, counter: vector[changedBy])
    }

    /// The version a `passwd` on `replica` at `now` gives the new wrapping.
    public func next(by replica: ReplicaID, at now: Int64) -> KeyWrappingVersion {
        var v = vector
        v[replica] = v[replica] &+ 1
        return KeyWrappingVersion(vector: v, changedBy: replica, changedAt: now)
    }

    /// Whether this version is well formed: the initial one, or a changer
    /// whose own entry is in the vector.
    public var isWellFormed: Bool {
        if vector.isEmpty { return changedBy == nil && changedAt == 0 }
        guard let changedBy else { return false }
        return vector[changedBy] > 0
    }

    /// What a replica holding `local` does with a bundle's `incoming`.
    public enum Resolution: Sendable, Equatable {
        /// Same version: nothing to do.
        case same
        /// The local wrapping supersedes (or is the same change as) the
        /// incoming one: keep it.
        case keepLocal
        /// The incoming wrapping supersedes the local one: adopt it.
        case adopt
        /// The two changes are concurrent and the incoming one wins: adopt
        /// its wrapping under the merged vector.
        case concurrentAdopt(merged: VersionVector)
        /// The two changes are concurrent and the local one wins: keep its
        /// wrapping, under the merged vector.
        case concurrentKeep(merged: VersionVector)
    }

    /// Resolves two wrapping versions. The rule is the same on every replica:
    /// the one whose vector supersedes wins; of two concurrent changes the
    /// one with the larger dot wins (replica id compared bytewise, then
    /// counter), and the winner's wrapping is kept under the pointwise
    /// maximum of both vectors, so it supersedes both from then on.
    public static func resolve(local: KeyWrappingVersion, incoming: KeyWrappingVersion) -> Resolution {
        switch incoming.vector.compare(local.vector) {
        case .equal: return .same
        case .before: return .keepLocal
        case .after: return .adopt
        case .concurrent:
            let merged = local.vector.merged(with: incoming.vector)
            // Concurrent vectors are both non-empty, so both have a dot.
            guard let a = local.dot, let b = incoming.dot else { return .concurrentKeep(merged: merged) }
            return b > a ? .concurrentAdopt(merged: merged) : .concurrentKeep(merged: merged)
        }
    }

    /// The encoding in a bundle header (format 2) and in the vault's
    /// `keyWrapping` row: vector (§Vectors) || changed-by replica id (16;
    /// zeros for the initial wrapping) || i64 changed at.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 26 + 24 * vector.count)
        w.bytes(vector.encoded)
        w.bytes(changedBy?.bytes ?? [UInt8](repeating: 0, count: 16))
        w.i64(changedAt)
        return w.data
    }

    public init(reading r: inout ByteReader) throws(FormatError) {
        let vector = try VersionVector(reading: &r)
        let by = try r.bytes(16)
        let at = try r.i64()
        let changer: ReplicaID?
        if by.allSatisfy({ $0 == 0 }) {
            changer = nil
        } else {
            guard let id = ReplicaID(bytes: by) else { throw .malformed("replica id of wrong length") }
            changer = id
        }
        self.init(vector: vector, changedBy: changer, changedAt: at)
        guard isWellFormed else {
            throw .malformed("the passphrase wrapping's version does not hold its own change")
        }
    }

    public init(decoding bytes: [UInt8]) throws(FormatError) {
        var r = ByteReader(bytes)
        try self.init(reading: &r)
        guard r.isAtEnd else { throw .malformed("trailing bytes after the passphrase wrapping's version") }
    }
}
