/// One write: the replica that made it and that replica's counter at the
/// time. Dots are unique across a vault's whole history.
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var replica: ReplicaID
    public var counter: UInt64

    public init(replica: ReplicaID, counter: UInt64) {
        self.replica = replica
        self.counter = counter
    }

    public static func < (a: Dot, b: Dot) -> Bool {
        a.replica == b.replica ? a.counter < b.counter : a.replica < b.replica
    }

    public var description: String { "\(replica.hex.prefix(8)):\(counter)" }
}

/// How two version vectors relate.
public enum CausalOrder: Sendable, Equatable {
    case equal
    /// The left side happened before (is dominated by) the right.
    case before
    /// The left side happened after (dominates) the right.
    case after
    /// Neither saw the other.
    case concurrent
}

/// A version vector: for each replica, the highest counter of that
/// replica's writes that are known. Missing entries are zero. Entries are
/// kept sorted by replica id, so equal vectors have equal encodings.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// Sorted by replica, counters > 0.
    public private(set) var entries: [(replica: ReplicaID, counter: UInt64)]

    public init() { entries = [] }

    public init(_ pairs: [ReplicaID: UInt64]) {
        entries = pairs.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The vector that contains exactly `dot` and nothing else.
    public init(dot: Dot) { entries = [(dot.replica, dot.counter)] }

    public static func == (a: VersionVector, b: VersionVector) -> Bool {
        a.entries.count == b.entries.count
            && zip(a.entries, b.entries).allSatisfy { $0.replica == $1.replica && $0.counter == $1.counter }
    }

    public func hash(into h: inout Hasher) {
        for e in entries {
            h.combine(e.replica)
            h.combine(e.counter)
        }
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// The counter for `replica` (0 when absent).
    public subscript(replica: ReplicaID) -> UInt64 {
        get {
            var lo = 0
            var hi = entries.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if entries[mid].replica == replica { return entries[mid].counter }
                if entries[mid].replica < replica { lo = mid + 1 } else { hi = mid }
            }
            return 0
        }
        set {
            if let i = entries.firstIndex(where: { $0.replica == replica }) {
                if newValue == 0 { entries.remove(at: i) } else { entries[i].counter = newValue }
            } else if newValue > 0 {
                let i = entries.firstIndex(where: { replica < $0.replica }) ?? entries.count
                entries.insert((replica, newValue), at: i)
            }
        }
    }

    /// Whether the write `dot` is included in this vector's history.
    public func contains(_ dot: Dot) -> Bool { self[dot.replica] >= dot.counter }

    /// Pointwise maximum (least upper bound).
    public func merged(with other: VersionVector) -> VersionVector {
        var out = VersionVector()
        var i = 0
        var j = 0
        let a = entries
        let b = other.entries
        var result: [(replica: ReplicaID, counter: UInt64)] = []
        result.reserveCapacity(max(a.count, b.count))
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].replica < b[j].replica) {
                result.append(a[i])
                i += 1
            } else if i == a.count || b[j].replica < a[i].replica {
                result.append(b[j])
                j += 1
            } else {
                result.append((a[i].replica, max(a[i].counter, b[j].counter)))
                i += 1
                j += 1
            }
        }
        out.entries = result
        return out
    }

    public mutating func merge(_ other: VersionVector) { self = merged(with: other) }

    /// Whether every entry of `self` is ≤ the same entry of `other`.
    public func isDominated(by other: VersionVector) -> Bool {
        entries.allSatisfy { other[$0.replica] >= $0.counter }
    }

    /// The causal relation between two vectors.
    public func compare(_ other: VersionVector) -> CausalOrder {
        let le = isDominated(by: other)
        let ge = other.isDominated(by: self)
        switch (le, ge) {
        case (true, true): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (false, false): return .concurrent
        }
    }

    public var description: String {
        "[" + entries.map { "\($0.replica.hex.prefix(8)):\($0.counter)" }.joined(separator: ",") + "]"
    }

    // MARK: Binary encoding (docs/bundle-format.md §Vectors)

    /// `u16 count` then `count` × (`16-byte replica id` `u64 counter`), big
    /// endian, sorted by replica id, counters non-zero.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.u16(UInt16(entries.count))
        for e in entries {
            w.id(e.replica)
            w.u64(e.counter)
        }
        return w.data
    }

    /// Decodes ``encoded``; rejects unsorted, duplicate or zero entries so
    /// that every vector has exactly one encoding.
    public init(decoding bytes: some Collection<UInt8>) throws(FormatError) {
        var r = ByteReader(Array(bytes))
        self = try VersionVector(reading: &r)
        guard r.isAtEnd else { throw .malformed("trailing bytes after version vector") }
    }

    public init(reading r: inout ByteReader) throws(FormatError) {
        let n = Int(try r.u16())
        var out: [(replica: ReplicaID, counter: UInt64)] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            let id = try r.identifier()
            let c = try r.u64()
            guard c > 0 else { throw .malformed("zero counter in version vector") }
            if let last = out.last, !(last.replica < id) {
                throw .malformed("version vector entries out of order")
            }
            out.append((id, c))
        }
        entries = out
    }
}
