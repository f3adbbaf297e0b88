import CofferSync
import PropertyBased
import Testing

/// Several replicas make random writes, deletes and renames and exchange
/// bundles at random (partial, delta, stale, out of order); after a final
/// full exchange they must be identical and must not have lost a write.
@Suite("replication simulation")
struct SimulationTests {
    static func run(seed: UInt64, replicas: Int, steps: Int) -> ModelWorld {
        var world = ModelWorld(replicas: replicas, items: 8, seed: seed)
        for _ in 0..<steps { world.step() }
        world.fullExchange()
        return world
    }

    @Test func replicasConvergeWithoutLosingWrites() async {
        await propertyCheck(count: 60, input: Gen.uint64(), Gen.int(in: 4...6), Gen.int(in: 50...400)) { seed, n, steps in
            let world = Self.run(seed: seed, replicas: n, steps: steps)
            Self.checkConverged(world)
            Self.checkNoLostWrites(world)
            Self.checkVectorSizes(world)
        }
    }

    /// A long run with a fixed seed, so a regression reproduces exactly.
    @Test func longFixedRun() {
        let world = Self.run(seed: 0x5EED_C0FF_EE00_0001, replicas: 5, steps: 3000)
        Self.checkConverged(world)
        Self.checkNoLostWrites(world)
        Self.checkVectorSizes(world)
        // The run really exercised the interesting cases.
        let final = world.replicas[0].items.values
        #expect(final.contains { $0.isDeleted })
        #expect(final.contains { !$0.conflictedRegisters.isEmpty })
    }

    // MARK: Checks

    /// All replicas hold identical states, and so show the same values.
    static func checkConverged(_ world: ModelWorld) {
        let first = world.replicas[0]
        for r in world.replicas.dropFirst() {
            #expect(r.items == first.items, "replica \(r.index) differs from replica 0")
            #expect(r.summary == first.summary)
            for (id, s) in r.items {
                for (rid, vs) in s.registers {
                    #expect(Register.shown(vs) == Register.shown(first.items[id]?.registers[rid] ?? []))
                }
            }
        }
    }

    /// Every write is visible, kept as a conflict, or superseded by a write
    /// whose writer had really received it; a deleted item was deleted by
    /// deletes that had seen every version still held.
    static func checkNoLostWrites(_ world: ModelWorld) {
        let final = world.replicas[0].items
        let records = Dictionary(world.log.map { (RecordKey($0), $0) }, uniquingKeysWith: { a, _ in a })
        for w in world.log {
            guard let state = final[w.item] else {
                Issue.record("item of write \(w.dot) vanished")
                continue
            }
            let versions = state.registers[w.register] ?? []
            if versions.contains(where: { $0.dot == w.dot }) { continue }
            let coveredBy = versions.first { v in
                records[RecordKey(item: w.item, register: w.register, dot: v.dot)]?.saw.contains(w.dot) ?? false
            }
            #expect(coveredBy != nil, "write \(w.dot) to \(w.register) was dropped without a later write having seen it")
        }
        for (id, state) in final where state.isDeleted {
            let markers = (state.registers[.deleted] ?? []).filter { !$0.isTombstone }
            let seenByDeletes = markers.reduce(into: Set<Dot>()) { acc, m in
                acc.formUnion(records[RecordKey(item: id, register: .deleted, dot: m.dot)]?.saw ?? [])
            }
            for (rid, versions) in state.registers where rid != .deleted {
                for v in versions {
                    #expect(seenByDeletes.contains(v.dot), "deleted item holds \(v.dot) that no delete had seen")
                }
            }
        }
        // A live delete marker next to a version it had not seen is a
        // delete conflict (the item stays, flagged).
        for (id, state) in final where !state.isDeleted {
            let markers = (state.registers[.deleted] ?? []).filter { !$0.isTombstone }
            guard !markers.isEmpty else { continue }
            let unseen = state.registers.filter { $0.key != .deleted }.values.joined().contains { v in
                !markers.contains { m in records[RecordKey(item: id, register: .deleted, dot: m.dot)]?.saw.contains(v.dot) ?? false }
            }
            #expect(unseen)
        }
    }

    /// Vectors grow with the number of replicas that wrote an item, never
    /// with the number of writes.
    static func checkVectorSizes(_ world: ModelWorld) {
        let writers = Dictionary(grouping: world.log, by: \.item).mapValues { Set($0.map(\.dot.replica)).count }
        for (id, state) in world.replicas[0].items {
            for v in state.registers.values.joined() {
                #expect(v.vector.count <= writers[id] ?? 0)
            }
        }
    }
}

struct RecordKey: Hashable {
    var item: ItemID
    var register: RegisterID
    var dot: Dot
    init(item: ItemID, register: RegisterID, dot: Dot) {
        self.item = item
        self.register = register
        self.dot = dot
    }
    init(_ r: WriteRecord) { self.init(item: r.item, register: r.register, dot: r.dot) }
}
