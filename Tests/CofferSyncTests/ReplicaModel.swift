import CofferSync

/// A small deterministic random number generator (SplitMix64), so a
/// history is reproducible from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Fixed ids so failures are readable.
enum ModelIDs {
    static func replica(_ n: Int) -> ReplicaID { ReplicaID(bytes: [UInt8(n + 1)] + [UInt8](repeating: 0, count: 15))! }
    static func item(_ n: Int) -> ItemID { ItemID(bytes: [0xAA] + [UInt8](repeating: 0, count: 14) + [UInt8(n + 1)])! }
    /// User field registers (the real ones are keyed hashes; any 16 bytes do).
    static let fields: [RegisterID] = (0..<3).map { RegisterID(bytes: [0xF0] + [UInt8](repeating: 0, count: 14) + [UInt8($0 + 1)])! }
    static let names = ["a", "b", "c"]
}

/// What a write really saw, tracked with explicit sets (independent of the
/// version-vector arithmetic under test).
struct WriteRecord: Hashable {
    var item: ItemID
    var register: RegisterID
    var dot: Dot
    /// Every dot of this item's registers the writer had received when it
    /// wrote (for delete markers: of the whole item; for field writes: of
    /// this register).
    var saw: Set<Dot>
    var isDeleteMarker: Bool
}

/// One replica of the model: item states built with the real
/// ``Register``/``ItemState``/``VersionVector`` code, fake payloads.
struct ModelReplica {
    let index: Int
    let id: ReplicaID
    var counter: UInt64 = 0
    var items: [ItemID: ItemState] = [:]
    /// Summary vector: highest counter seen per replica.
    var summary = VersionVector()
    /// Ground truth: every dot ever received per (item, register).
    var known: [ItemID: [RegisterID: Set<Dot>]] = [:]

    init(index: Int) {
        self.index = index
        id = ModelIDs.replica(index)
    }

    mutating func nextDot() -> Dot {
        counter += 1
        summary[id] = counter
        return Dot(replica: id, counter: counter)
    }

    func isLive(_ item: ItemID) -> Bool { items[item].map { !$0.isDeleted } ?? false }

    /// One local write of `value` (nil = tombstone) to `register`, as
    /// `Vault.apply` does it. Returns the record of the write.
    @discardableResult
    mutating func write(item: ItemID, register: RegisterID, value: String?, at time: Int64, log: inout [WriteRecord]) -> Dot {
        let dot = nextDot()
        var state = items[item] ?? ItemState(id: item)
        writeInto(&state, register: register, value: value, dot: dot, time: time, log: &log)
        // Editing an item that carries a live delete marker keeps it
        // (Vault.edit writes a tombstone over the markers).
        if register != .deleted, !(state.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
            writeInto(&state, register: .deleted, value: nil, dot: dot, time: time, log: &log)
        }
        items[item] = state
        return dot
    }

    private mutating func writeInto(_ state: inout ItemState, register: RegisterID, value: String?, dot: Dot, time: Int64, log: inout [WriteRecord]) {
        let current = state.registers[register] ?? []
        let vector = Register.vectorForWrite(over: current, dot: dot)
        let payload = Array("\(dot):\(value ?? "-")".utf8)
        state.registers[register] = [
            FieldVersion(dot: dot, vector: vector, writtenAt: time, isTombstone: value == nil, payload: payload)
        ]
        let saw = known[state.id]?[register] ?? []
        log.append(WriteRecord(item: state.id, register: register, dot: dot, saw: saw, isDeleteMarker: false))
        known[state.id, default: [:]][register, default: []].insert(dot)
    }

    /// `coffer rm`: a delete marker covering the whole item as seen here.
    mutating func delete(item: ItemID, at time: Int64, log: inout [WriteRecord]) {
        guard var state = items[item] else { return }
        let dot = nextDot()
        var vector = state.vector
        vector[dot.replica] = dot.counter
        state.registers[.deleted] = [
            FieldVersion(dot: dot, vector: vector, writtenAt: time, isTombstone: false, payload: Array("\(dot):rm".utf8))
        ]
        let saw = (known[item] ?? [:]).values.reduce(into: Set<Dot>()) { $0.formUnion($1) }
        log.append(WriteRecord(item: item, register: .deleted, dot: dot, saw: saw, isDeleteMarker: true))
        known[item, default: [:]][.deleted, default: []].insert(dot)
        items[item] = state
    }

    /// A bundle of this replica: every item (full) or only versions whose
    /// dot the receiver's summary lacks (delta).
    func bundle(deltaFor receiverSummary: VersionVector? = nil) -> ModelBundle {
        var out: [ItemID: ItemState] = [:]
        for (id, state) in items {
            guard let s = receiverSummary else {
                out[id] = state
                continue
            }
            var delta = ItemState(id: id)
            for (rid, versions) in state.registers {
                let missing = versions.filter { !s.contains($0.dot) }
                if !missing.isEmpty { delta.registers[rid] = missing }
            }
            if !delta.registers.isEmpty { out[id] = delta }
        }
        return ModelBundle(from: index, summary: summary, items: out, known: known)
    }

    /// Imports a bundle: item-wise merge, summary raised to the sender's.
    mutating func merge(_ b: ModelBundle) {
        for (id, incoming) in b.items {
            items[id] = (items[id] ?? ItemState(id: id)).merged(with: incoming)
        }
        summary.merge(b.summary)
        for (id, regs) in b.known {
            for (rid, dots) in regs { known[id, default: [:]][rid, default: []].formUnion(dots) }
        }
    }
}

/// A snapshot of a replica's state as a bundle file would carry it.
struct ModelBundle {
    var from: Int
    var summary: VersionVector
    var items: [ItemID: ItemState]
    /// Ground truth travelling along (not part of a real bundle).
    var known: [ItemID: [RegisterID: Set<Dot>]]
}

/// Drives a set of replicas through a script of random operations.
struct ModelWorld {
    var replicas: [ModelReplica]
    var log: [WriteRecord] = []
    /// Every bundle ever produced (stale ones can be delivered late).
    var published: [ModelBundle] = []
    var rng: SplitMix
    let itemCount: Int
    /// Write times: a small range so equal times (ties) happen.
    var time: Int64 = 1000

    init(replicas n: Int, items: Int = 3, seed: UInt64) {
        replicas = (0..<n).map { ModelReplica(index: $0) }
        itemCount = items
        rng = SplitMix(seed: seed)
    }

    mutating func tick() -> Int64 {
        // Clocks drift: sometimes time stands still or goes back a little.
        time += Int64.random(in: -2...3, using: &rng)
        return time
    }

    /// Runs one random operation.
    mutating func step() {
        let r = Int.random(in: 0..<replicas.count, using: &rng)
        let itemIndex = Int.random(in: 0..<itemCount, using: &rng)
        let item = ModelIDs.item(itemIndex)
        let roll = Int.random(in: 0..<100, using: &rng)
        let t = tick()
        switch roll {
        case 0..<40: // write a field (creates the item when missing)
            if replicas[r].items[item] == nil {
                // Item ids are random in real life: only one replica ever
                // creates a given item (others create their own, possibly
                // with the same name).
                guard itemIndex % replicas.count == r else { return }
                let name = ModelIDs.names.randomElement(using: &rng)!
                replicas[r].write(item: item, register: .name, value: name, at: t, log: &log)
            }
            guard replicas[r].isLive(item) else { return }
            let f = ModelIDs.fields.randomElement(using: &rng)!
            replicas[r].write(item: item, register: f, value: "v\(Int.random(in: 0..<5, using: &rng))", at: t, log: &log)
        case 40..<48: // remove a field
            guard replicas[r].isLive(item) else { return }
            replicas[r].write(item: item, register: ModelIDs.fields.randomElement(using: &rng)!, value: nil, at: t, log: &log)
        case 48..<58: // rename
            guard replicas[r].isLive(item) else { return }
            replicas[r].write(item: item, register: .name, value: ModelIDs.names.randomElement(using: &rng)!, at: t, log: &log)
        case 58..<66: // delete
            guard replicas[r].isLive(item) else { return }
            replicas[r].delete(item: item, at: t, log: &log)
        case 66..<78: // publish a full bundle, deliver it to one other replica
            let b = replicas[r].bundle()
            published.append(b)
            let to = Int.random(in: 0..<replicas.count, using: &rng)
            if to != r { replicas[to].merge(b) }
        case 78..<86: // a delta bundle computed for one receiver
            let to = Int.random(in: 0..<replicas.count, using: &rng)
            guard to != r else { return }
            replicas[to].merge(replicas[r].bundle(deltaFor: replicas[to].summary))
        case 86..<94: // a stale bundle delivered late (out of order)
            guard !published.isEmpty else { return }
            let b = published.randomElement(using: &rng)!
            let to = Int.random(in: 0..<replicas.count, using: &rng)
            if to != b.from { replicas[to].merge(b) }
        default: // a replica syncs with a folder holding the latest bundle of everyone
            for other in replicas.indices where other != r {
                replicas[r].merge(replicas[other].bundle())
            }
        }
    }

    /// Every replica receives every other replica's state.
    mutating func fullExchange() {
        for i in replicas.indices {
            for j in replicas.indices where i != j { replicas[j].merge(replicas[i].bundle()) }
        }
        for i in replicas.indices {
            for j in replicas.indices where i != j { replicas[j].merge(replicas[i].bundle()) }
        }
    }
}
