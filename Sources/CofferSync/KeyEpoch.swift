/// The key epoch of a vault (docs/key-hierarchy.md §Master-key rotation):
/// which `coffer rekey` made the master key a replica holds. Epoch 0 is the
/// key made by `coffer init`; every rekey on replica R makes epoch
/// `(number + 1, R, its clock)`.
///
/// Epochs are totally ordered by `(number, rekeyed-by replica id bytewise)`:
/// two rekeys made concurrently on two replicas (both from epoch n) get the
/// same number, and the one by the larger replica id wins on every replica,
/// whatever the order in which the bundles arrive. A replica adopts a newer
/// epoch by re-encrypting its own state under the newer key; a bundle of an
/// older epoch than the vault's is refused.
public struct KeyEpoch: Sendable, Equatable, Comparable, CustomStringConvertible {
    /// 0 for the initial key.
    public var number: UInt64
    /// The replica whose rekey made this key; nil for epoch 0.
    public var rekeyedBy: ReplicaID?
    /// When that rekey ran (ms since 1970; informational, never compared).
    public var rekeyedAt: Int64

    public init(number: UInt64, rekeyedBy: ReplicaID?, rekeyedAt: Int64) {
        self.number = number
        self.rekeyedBy = rekeyedBy
        self.rekeyedAt = rekeyedAt
    }

    /// The key made by `coffer init` (every vault before format 4).
    public static let initial = KeyEpoch(number: 0, rekeyedBy: nil, rekeyedAt: 0)

    public var isInitial: Bool { number == 0 }

    /// Largest epoch number accepted (the format's counter bound, 2^53).
    public static let maxNumber: UInt64 = 1 << 53

    /// How far a bundle's key epoch may be ahead of the receiver's for the
    /// receiver to adopt it (rule `key-epoch-jump`, docs/bundle-format.md):
    /// a replica that missed up to this many rekeys still catches up, and a
    /// key holder cannot push every replica to the end of the epoch space
    /// in one bundle, so there is always a next epoch for `coffer rekey`.
    public static let maxJump: UInt64 = 1000

    /// Largest epoch number a clone starts from (rule `key-epoch-jump` for
    /// a vault that has no epoch yet): half the space stays for rekeys.
    public static let maxCloneNumber: UInt64 = 1 << 52

    /// Whether a replica on this epoch may adopt `newer` (rule
    /// `key-epoch-jump`): at most ``maxJump`` rekeys ahead.
    public func mayAdopt(_ newer: KeyEpoch) -> Bool {
        newer.number <= number &+ Self.maxJump
    }

    /// The epoch a rekey on `replica` at `now` makes.
    public func next(by replica: ReplicaID, at now: Int64) -> KeyEpoch {
        KeyEpoch(number: number &+ 1, rekeyedBy: replica, rekeyedAt: now)
    }

    public static func < (a: KeyEpoch, b: KeyEpoch) -> Bool {
        if a.number != b.number { return a.number < b.number }
        switch (a.rekeyedBy, b.rekeyedBy) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case (let x?, let y?): return x < y
        }
    }

    /// Equality ignores nothing: two epochs are the same rekey only with
    /// the same number, replica and time.
    public var description: String {
        guard let by = rekeyedBy else { return "\(number)" }
        return "\(number) (rekeyed on \(by.hex.prefix(8)))"
    }

    /// Whether this epoch is well formed: epoch 0 with no replica and time
    /// 0, or a positive number (≤ 2^53) with a replica.
    public var isWellFormed: Bool {
        if number == 0 { return rekeyedBy == nil && rekeyedAt == 0 }
        return rekeyedBy != nil && number <= Self.maxNumber
    }

    /// `u64 number || rekeyed-by replica id (16; zeros for epoch 0) ||
    /// i64 rekeyed at`: in a bundle header (format 3), the vault's
    /// `keyEpoch` row, the wrap AD and the key check.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 32)
        w.u64(number)
        w.bytes(rekeyedBy?.bytes ?? [UInt8](repeating: 0, count: 16))
        w.i64(rekeyedAt)
        return w.data
    }

    public init(reading r: inout ByteReader) throws(FormatError) {
        let number = try r.u64()
        let by = try r.bytes(16)
        let at = try r.i64()
        let replica: ReplicaID?
        if by.allSatisfy({ $0 == 0 }) {
            replica = nil
        } else {
            guard let id = ReplicaID(bytes: by) else { throw .malformed("replica id of wrong length") }
            replica = id
        }
        self.init(number: number, rekeyedBy: replica, rekeyedAt: at)
        guard isWellFormed else {
            throw .malformed("the key epoch is malformed (epoch 0 names a replica, or a later epoch names none or exceeds 2^53)")
        }
    }

    public init(decoding bytes: [UInt8]) throws(FormatError) {
        var r = ByteReader(bytes)
        try self.init(reading: &r)
        guard r.isAtEnd else { throw .malformed("trailing bytes after the key epoch") }
    }
}
