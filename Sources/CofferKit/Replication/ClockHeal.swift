import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// What ``Vault/restampFutureWrites(acknowledgedUpTo:)`` re-stamped.
public struct ClockRestamp: Sendable, Equatable {
    /// Versions given a new dot and the current time.
    public var versions: Int
    /// Items they belong to.
    public var items: Int
    /// The earliest (far-future) time those versions carried.
    public var since: Date

    /// One line for people.
    public var message: String {
        "this replica's clock was ahead when it wrote \(versions) version\(versions == 1 ? "" : "s") of \(items) item\(items == 1 ? "" : "s") (dated \(Self.format(since)) and later, more than a day ahead of now); re-dated them to now with the same values, so other replicas accept them again"
    }

    static func format(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }
}

/// A machine whose clock ran fast writes versions dated ahead of every
/// other replica; the others refuse them (docs/bundle-format.md
/// §Validation rules: `written-after-bundle`, `future-bundle`), so its
/// bundles stop merging anywhere. Once its clock is right again, it gives
/// its own such versions a new dot and the current time — same values,
/// sealed again — so that sync resumes without anyone re-editing them.
/// The receivers' rules are unchanged: a far-future time in a bundle is
/// still refused (docs/sync.md, "A clock that ran fast").
extension Replication {
    package func restampFutureWrites(acknowledgedUpTo floor: UInt64? = nil) throws(CofferError) -> ClockRestamp? {
        let now = Clock.nowMillis()
        let limit = now &+ BundleValidation.clockSkew
        if floor == nil {
            let newest = try CofferError.wrap {
                try store.read { db in try Queries.newestWriteTime(db, replica: try Queries.localReplica(db).id) }
            }
            guard let newest, newest > limit else { return nil }
        }
        return try CofferError.wrap { try write { db, mac in try restamp(db, mac, now: now, above: floor ?? 0) } }
    }

    /// ``restampFutureWrites(acknowledgedUpTo:)`` inside a write transaction.
    func restamp(_ db: StoreConnection, _ mac: VaultMAC, now: Int64, above floor: UInt64) throws -> ClockRestamp? {
        let limit = now &+ BundleValidation.clockSkew
        let own = try Queries.localReplica(db).id
        var versions = 0
        var items = 0
        var since = Int64.max
        for id in try Queries.itemsWithVersions(db, replica: own, above: floor, writtenAfter: limit) {
            guard let (row, old, _) = try loadItem(db, id: id), row.policy == .sync else { continue }
            func due(_ v: FieldVersion) -> Bool { v.dot.replica == own && v.dot.counter > floor && v.writtenAt > limit }
            guard old.registers.values.contains(where: { $0.contains(where: due) }) else { continue }
            let dot = try identity.nextDot(db, mac)
            var new = old
            var count = 0
            for (rid, held) in old.registers {
                var out: [FieldVersion] = []
                for v in held {
                    guard due(v), !(old.isDeleted && rid == .deleted) else {
                        out.append(v)
                        continue
                    }
                    var vector = v.vector
                    vector[dot.replica] = dot.counter
                    out.append(seal(try open(v, item: id, register: rid), item: id, register: rid, dot: dot, vector: vector, at: now, tombstone: v.isTombstone))
                    since = min(since, v.writtenAt)
                    count += 1
                }
                new.registers[rid] = out.sorted { $0.dot < $1.dot }
            }
            if old.isDeleted {
                // The re-stamped versions carry the new dot, which no
                // marker has seen: the markers become one marker of that
                // dot covering everything they covered (what `rm` writes),
                // so the item stays deleted. Tombstones it covers go.
                let held = old.registers[.deleted] ?? []
                let markers = held.filter { !$0.isTombstone }
                var vector = VersionVector()
                for m in markers { vector = vector.merged(with: m.vector) }
                vector[dot.replica] = dot.counter
                for m in markers where due(m) { since = min(since, m.writtenAt) }
                count += markers.filter(due).count
                let marker = seal(
                    FieldPayload(name: "@deleted", value: Array("1".utf8), isSecret: false), item: id, register: .deleted, dot: dot,
                    vector: vector, at: now, tombstone: false)
                new.registers[.deleted] = ([marker] + held.filter { $0.isTombstone && !vector.contains($0.dot) }).sorted { $0.dot < $1.dot }
            }
            guard new.isDeleted == old.isDeleted else {
                throw CofferError(.internalError, "re-stamping item \(id.hex.prefix(8)) would change whether it is deleted")
            }
            let derived = try derivedRow(for: new, policy: row.policy, createdAt: row.createdAt, updatedAt: row.updatedAt)
            try save(db, row: derived, old: old, new: new, now: now, mac: mac)
            versions += count
            items += 1
        }
        guard items > 0 else { return nil }
        return ClockRestamp(versions: versions, items: items, since: Clock.date(since))
    }
}
