/// Sync policy of an item.
public enum SyncPolicy: String, Sendable, Codable, CaseIterable {
    /// Travels in bundles.
    case sync
    /// Never leaves this vault file.
    case localOnly = "local-only"
}

/// The replicated state of one item: a map of registers. This is the unit
/// that bundles carry and merge combines.
public struct ItemState: Sendable, Equatable {
    public var id: ItemID
    public var registers: [RegisterID: [FieldVersion]]

    public init(id: ItemID, registers: [RegisterID: [FieldVersion]] = [:]) {
        self.id = id
        self.registers = registers
    }

    /// Register-wise merge (see ``Register/merge(_:_:)``).
    public func merged(with other: ItemState) -> ItemState {
        precondition(id == other.id)
        var out = self
        for (rid, versions) in other.registers {
            out.registers[rid] = Register.merge(out.registers[rid] ?? [], versions)
        }
        return out
    }

    /// Pointwise maximum of every version's vector: the item's vector.
    public var vector: VersionVector {
        var v = VersionVector()
        for versions in registers.values { for x in versions { v.merge(x.vector) } }
        return v
    }

    /// Every dot stored in this item.
    public var dots: [Dot] { registers.values.flatMap { $0.map(\.dot) } }

    /// The combined history of the delete markers currently held, or nil
    /// when the item carries no live delete marker.
    public var deleteVector: VersionVector? {
        let marks = (registers[.deleted] ?? []).filter { !$0.isTombstone }
        guard !marks.isEmpty else { return nil }
        var v = VersionVector()
        for m in marks { v.merge(m.vector) }
        return v
    }

    /// Deleted when a delete marker is held and every other version was seen
    /// by a delete: a delete removes only what its replica had seen.
    public var isDeleted: Bool {
        guard let d = deleteVector else { return false }
        for (rid, versions) in registers where rid != .deleted {
            for v in versions where !d.contains(v.dot) { return false }
        }
        return true
    }

    /// A delete marker is held but some version was written concurrently
    /// with it (without seeing it): the item stays, flagged.
    public var hasDeleteConflict: Bool {
        let marks = (registers[.deleted] ?? []).filter { !$0.isTombstone }
        guard !marks.isEmpty, !isDeleted else { return false }
        for (rid, versions) in registers where rid != .deleted {
            for v in versions {
                for m in marks where !m.vector.contains(v.dot) && !v.vector.contains(m.dot) {
                    return true
                }
            }
        }
        return false
    }

    /// Registers holding more than one version (concurrent writes).
    public var conflictedRegisters: [RegisterID] {
        registers.filter { $0.key != .deleted && $0.value.count > 1 }.map(\.key).sorted()
    }
}
