import CofferSync
import PropertyBased
import Testing

/// The merge laws, checked over random histories of writes, deletes and
/// renames made by the replica model (real Register/ItemState/VersionVector
/// code, fake payloads).
@Suite("merge laws, property-based")
struct MergePropertyTests {
    /// States of one item as different replicas (or stale bundles) hold
    /// them after a random history.
    static func candidateStates(seed: UInt64, steps: Int, replicas: Int = 3) -> [ItemID: [ItemState]] {
        var world = ModelWorld(replicas: replicas, items: 3, seed: seed)
        for _ in 0..<steps { world.step() }
        var out: [ItemID: [ItemState]] = [:]
        for r in world.replicas {
            for (id, s) in r.items { out[id, default: []].append(s) }
        }
        for b in world.published.suffix(4) {
            for (id, s) in b.items { out[id, default: []].append(s) }
        }
        return out
    }

    @Test func mergeIsCommutativeAssociativeAndIdempotent() async {
        await propertyCheck(count: 150, input: Gen.uint64(), Gen.int(in: 5...120)) { seed, steps in
            for (_, states) in Self.candidateStates(seed: seed, steps: steps) {
                let pool = Array(states.prefix(6))
                for a in pool {
                    #expect(a.merged(with: a) == a, "idempotence")
                    for b in pool {
                        let ab = a.merged(with: b)
                        let ba = b.merged(with: a)
                        #expect(ab == ba, "commutativity")
                        #expect(ab.merged(with: b) == ab, "merging again changes nothing")
                        // The derived facts follow the state.
                        #expect(ab.isDeleted == ba.isDeleted)
                        #expect(ab.hasDeleteConflict == ba.hasDeleteConflict)
                        for (rid, vs) in ab.registers {
                            #expect(Register.shown(vs) == Register.shown(ba.registers[rid] ?? []))
                        }
                        for c in pool {
                            #expect(ab.merged(with: c) == a.merged(with: b.merged(with: c)), "associativity")
                        }
                    }
                }
            }
        }
    }

    @Test func registerMergeLaws() async {
        await propertyCheck(count: 150, input: Gen.uint64(), Gen.int(in: 5...80)) { seed, steps in
            for (_, states) in Self.candidateStates(seed: seed, steps: steps) {
                let regs = Set(states.flatMap { $0.registers.keys })
                for rid in regs {
                    let sets = states.prefix(5).map { $0.registers[rid] ?? [] }
                    for a in sets {
                        #expect(Register.merge(a, a) == Register.normalize(a))
                        for b in sets {
                            #expect(Register.merge(a, b) == Register.merge(b, a))
                            for c in sets {
                                #expect(Register.merge(Register.merge(a, b), c) == Register.merge(a, Register.merge(b, c)))
                            }
                        }
                    }
                }
            }
        }
    }

    /// A delta bundle (only versions the receiver's summary lacks) merges
    /// to exactly what the full state would.
    @Test func deltaMergeEqualsFullMerge() async {
        await propertyCheck(count: 100, input: Gen.uint64(), Gen.int(in: 5...150)) { seed, steps in
            var world = ModelWorld(replicas: 4, items: 4, seed: seed)
            for _ in 0..<steps { world.step() }
            for i in world.replicas.indices {
                for j in world.replicas.indices where i != j {
                    var viaFull = world.replicas[j]
                    viaFull.merge(world.replicas[i].bundle())
                    var viaDelta = world.replicas[j]
                    viaDelta.merge(world.replicas[i].bundle(deltaFor: world.replicas[j].summary))
                    #expect(viaFull.items == viaDelta.items)
                }
            }
        }
    }

    /// The vector arithmetic agrees with what each writer really saw: a
    /// version's vector contains a dot of its register exactly when its
    /// writer had received that write.
    @Test func vectorsMatchRealCausality() async {
        await propertyCheck(count: 100, input: Gen.uint64(), Gen.int(in: 5...150)) { seed, steps in
            var world = ModelWorld(replicas: 4, items: 3, seed: seed)
            for _ in 0..<steps { world.step() }
            let byKey = Dictionary(grouping: world.log) { RegKey(item: $0.item, register: $0.register) }
            let byItem = Dictionary(grouping: world.log, by: \.item)
            for r in world.replicas {
                for (id, state) in r.items {
                    for (rid, versions) in state.registers {
                        for v in versions {
                            guard let rec = world.log.first(where: { $0.item == id && $0.register == rid && $0.dot == v.dot }) else {
                                Issue.record("version without a write record")
                                continue
                            }
                            // Delete markers cover the whole item; field
                            // versions their own register.
                            let others = rec.isDeleteMarker ? (byItem[id] ?? []) : (byKey[RegKey(item: id, register: rid)] ?? [])
                            for w in others where w.dot != v.dot {
                                #expect(v.vector.contains(w.dot) == rec.saw.contains(w.dot), "vector \(v.vector) vs saw \(w.dot)")
                            }
                        }
                    }
                }
            }
        }
    }

    // MARK: Version vectors

    static let vectorGen = Gen.int(in: 0...4).array(of: 0...5).map { counters -> VersionVector in
        var pairs: [ReplicaID: UInt64] = [:]
        for (i, c) in counters.enumerated() { pairs[ModelIDs.replica(i)] = UInt64(c) }
        return VersionVector(pairs)
    }

    @Test func vectorsFormAPartialOrderWithMergeAsJoin() async {
        await propertyCheck(count: 300, input: Self.vectorGen, Self.vectorGen, Self.vectorGen) { a, b, c in
            // Partial order.
            #expect(a.isDominated(by: a))
            if a.isDominated(by: b) && b.isDominated(by: a) { #expect(a == b) }
            if a.isDominated(by: b) && b.isDominated(by: c) { #expect(a.isDominated(by: c)) }
            // Merge is the least upper bound.
            let j = a.merged(with: b)
            #expect(a.isDominated(by: j) && b.isDominated(by: j))
            if a.isDominated(by: c) && b.isDominated(by: c) { #expect(j.isDominated(by: c)) }
            #expect(j == b.merged(with: a))
            #expect(j.merged(with: c) == a.merged(with: b.merged(with: c)))
            #expect(a.merged(with: a) == a)
            // compare() agrees with the order.
            switch a.compare(b) {
            case .equal: #expect(a == b)
            case .before: #expect(a.isDominated(by: b) && a != b)
            case .after: #expect(b.isDominated(by: a) && a != b)
            case .concurrent: #expect(!a.isDominated(by: b) && !b.isDominated(by: a))
            }
            // contains() is dominance of a single dot.
            for e in b.entries {
                #expect(a.contains(Dot(replica: e.replica, counter: e.counter)) == (a[e.replica] >= e.counter))
            }
            // One encoding per vector.
            #expect((try? VersionVector(decoding: a.encoded)) == a)
            #expect((a == b) == (a.encoded == b.encoded))
        }
    }
}

struct RegKey: Hashable {
    var item: ItemID
    var register: RegisterID
}
