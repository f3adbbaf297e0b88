/// Opaque 16-byte identifier of a register (one field of one item). For
/// user fields it is a keyed hash of the field name (so names stay
/// secret); the item's own metadata uses the fixed ids in ``RegisterID``.
public struct RegisterID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Bytes 0–7 and 8–15, big-endian (inline, like ``Identifier16``).
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init?(bytes: some Collection<UInt8>) {
        guard let (h, l) = Halves.load(bytes) else { return nil }
        high = h
        low = l
    }

    /// The raw bytes, always 16 (a new array on each call).
    public var bytes: [UInt8] { Halves.bytes(high, low) }

    private init(fixed n: UInt8) {
        high = 0
        low = UInt64(n)
    }

    /// The item's name (a path such as `work/openai`).
    public static let name = RegisterID(fixed: 1)
    /// The item's type (`api-key`, `login`, …).
    public static let type = RegisterID(fixed: 2)
    /// Tags, newline-separated, sorted.
    public static let tags = RegisterID(fixed: 3)
    /// Source id (`openai`).
    public static let source = RegisterID(fixed: 4)
    /// Expiry date, `YYYY-MM-DD`.
    public static let expires = RegisterID(fixed: 5)
    /// The delete marker; see ``ItemState/isDeleted``.
    public static let deleted = RegisterID(fixed: 6)
    /// Environment-variable mapping for `coffer env`.
    public static let env = RegisterID(fixed: 7)

    /// Whether this is one of the fixed metadata ids (first 15 bytes zero).
    public var isMetadata: Bool { high == 0 && low <= 0xff }

    public static func < (a: RegisterID, b: RegisterID) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }
    public var description: String { Hex.encode(bytes) }
}

/// One stored version of a register: the write that made it, what that
/// write had seen of the register, when, and the encrypted payload.
/// Versions are immutable; merge only adds and drops whole versions.
public struct FieldVersion: Hashable, Sendable {
    /// The write that created this version.
    public var dot: Dot
    /// The register's history as seen by that write, including `dot`.
    public var vector: VersionVector
    /// Wall-clock time of the write, milliseconds since 1970 (used only to
    /// choose which of several concurrent versions is shown).
    public var writtenAt: Int64
    /// The field was removed (the payload still names it).
    public var isTombstone: Bool
    /// `nonce || XChaCha20-Poly1305 ciphertext` of a ``FieldPayload``.
    public var payload: [UInt8]

    public init(dot: Dot, vector: VersionVector, writtenAt: Int64, isTombstone: Bool, payload: [UInt8]) {
        self.dot = dot
        self.vector = vector
        self.writtenAt = writtenAt
        self.isTombstone = isTombstone
        self.payload = payload
    }

    /// Whether `other`'s write had seen this version.
    public func isSuperseded(by other: FieldVersion) -> Bool {
        other.dot != dot && other.vector.contains(dot)
    }

    private static let associatedDataLabel = Array("coffer-field-v1".utf8)

    /// The associated data that binds a payload to its place: vault, item,
    /// register and this exact version. See docs/bundle-format.md.
    public static func associatedData(
        vault: VaultID, item: ItemID, register: RegisterID,
        dot: Dot, vector: VersionVector, writtenAt: Int64, isTombstone: Bool
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 114 + 24 * vector.count) // exact size
        w.bytes(associatedDataLabel)
        w.id(vault)
        w.id(item)
        w.id(register)
        w.id(dot.replica)
        w.u64(dot.counter)
        w.bytes(vector.encoded)
        w.i64(writtenAt)
        w.u8(isTombstone ? 1 : 0)
        return w.data
    }
}

/// Multi-value register merge: the state-based CRDT behind every field.
public enum Register {
    /// Union of two version sets, minus every version that another version
    /// in the union had seen. Commutative, associative and idempotent.
    public static func merge(_ a: [FieldVersion], _ b: [FieldVersion]) -> [FieldVersion] {
        if b.isEmpty { return normalize(a) }
        if a.isEmpty { return normalize(b) }
        return normalize(a + b)
    }

    /// Deduplicates by dot, drops superseded versions and sorts by dot.
    public static func normalize(_ versions: [FieldVersion]) -> [FieldVersion] {
        var byDot: [Dot: FieldVersion] = [:]
        for v in versions {
            if let existing = byDot[v.dot] {
                // Same write seen twice: identical unless something is
                // corrupt; pick deterministically anyway.
                if v.payload.lexicographicallyPrecedes(existing.payload) { byDot[v.dot] = v }
            } else {
                byDot[v.dot] = v
            }
        }
        let all = Array(byDot.values)
        let kept = all.filter { v in !all.contains { v.isSuperseded(by: $0) } }
        return kept.sorted { $0.dot < $1.dot }
    }

    /// The version shown when several are concurrent: the latest write
    /// time, ties broken by the larger replica id, then the larger counter.
    /// Every replica makes the same choice.
    public static func shown(_ versions: [FieldVersion]) -> FieldVersion? {
        versions.max { a, b in
            if a.writtenAt != b.writtenAt { return a.writtenAt < b.writtenAt }
            return a.dot < b.dot
        }
    }

    /// The vector a new local write must carry: everything the register
    /// holds now, plus the new dot.
    public static func vectorForWrite(over versions: [FieldVersion], dot: Dot) -> VersionVector {
        var v = VersionVector(dot: dot)
        for old in versions { v.merge(old.vector) }
        return v
    }
}
