import CofferSync
import Foundation
import GRDB

/// What a replica knows of each member who published signed bundles
/// (format 8, docs/sharing.md, "Signed writes"): the highest publication
/// counter it accepted from (or, for its own identity, published with) each
/// member key, the summary of that member's accepted bundles, and which
/// member key each replica id is bound to.
public struct PublisherRecord: Sendable, Equatable {
    /// The member's Ed25519 public key.
    public var signKey: [UInt8]
    /// The highest publication counter accepted or published.
    public var counter: UInt64
    /// The union of the (backed) summaries of the member's accepted bundles.
    public var summary: VersionVector

    public init(signKey: [UInt8], counter: UInt64, summary: VersionVector) {
        self.signKey = signKey
        self.counter = counter
        self.summary = summary
    }
}

extension IntegrityTerm {
    /// "M" || sign key || u64 counter || summary (area: the header).
    public static func publisher(_ p: PublisherRecord) -> [UInt8] {
        var w = ByteWriter(capacity: 48 + 24 * p.summary.count)
        w.u8(UInt8(ascii: "M"))
        w.bytes(p.signKey)
        w.u64(p.counter)
        w.bytes(p.summary.encoded)
        return w.data
    }

    /// "B" || replica id || sign key (area: the header).
    public static func replicaBinding(_ replica: ReplicaID, signKey: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 49)
        w.u8(UInt8(ascii: "B"))
        w.id(replica)
        w.bytes(signKey)
        return w.data
    }
}

extension Queries {
    /// Every publisher row, by key.
    public static func publishers(_ db: Database) throws -> [PublisherRecord] {
        guard try tableExists(ReadConnection(db), "memberPublisher") else { return [] }
        return try Row.fetchAll(db, sql: "SELECT signKey, counter, summary FROM memberPublisher ORDER BY signKey").map { row in
            try publisherRecord(row)
        }
    }

    private static func publisherRecord(_ row: Row) throws -> PublisherRecord {
        let key = try row.blob(at: 0, name: "memberPublisher.signKey", length: 32)
        let counter = try row.int64(at: 1, name: "memberPublisher.counter", in: 0...Int64(BundleValidation.maxCounter))
        let summary: VersionVector
        do { summary = try VersionVector(decoding: Array(try row.blob(at: 2, name: "memberPublisher.summary"))) } catch {
            throw StoreError.damaged("memberPublisher.summary is malformed (\(error))")
        }
        return PublisherRecord(signKey: Array(key), counter: UInt64(counter), summary: summary)
    }

    /// The row of one member key, or nil.
    public static func publisher(_ db: Database, signKey: [UInt8]) throws -> PublisherRecord? {
        guard try tableExists(ReadConnection(db), "memberPublisher") else { return nil }
        guard let row = try Row.fetchOne(db, sql: "SELECT signKey, counter, summary FROM memberPublisher WHERE signKey = ?", arguments: [Data(signKey)])
        else { return nil }
        return try publisherRecord(row)
    }

    /// Writes a member key's row, keeping the vault MAC.
    public static func setPublisher(_ db: Database, _ p: PublisherRecord, mac: VaultMAC) throws {
        if let old = try publisher(db, signKey: p.signKey) { mac.toggle(IntegrityTerm.publisher(old)) }
        try db.execute(
            sql: "INSERT OR REPLACE INTO memberPublisher (signKey, counter, summary) VALUES (?, ?, ?)",
            arguments: [Data(p.signKey), Int64(p.counter), Data(p.summary.encoded)])
        mac.toggle(IntegrityTerm.publisher(p))
    }

    /// Every replica binding: replica id → member key.
    public static func replicaBindings(_ db: Database) throws -> [ReplicaID: [UInt8]] {
        guard try tableExists(ReadConnection(db), "replicaBinding") else { return [:] }
        var out: [ReplicaID: [UInt8]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT replicaId, signKey FROM replicaBinding") {
            guard let id = ReplicaID(bytes: Array(try row.blob(at: 0, name: "replicaBinding.replicaId", length: 16))) else {
                throw StoreError.damaged("replica id of wrong length in replicaBinding")
            }
            out[id] = Array(try row.blob(at: 1, name: "replicaBinding.signKey", length: 32))
        }
        return out
    }

    /// Binds a replica id to a member key (the first binding stays: the
    /// caller checks that none exists).
    public static func bindReplica(_ db: Database, _ replica: ReplicaID, signKey: [UInt8], mac: VaultMAC) throws {
        try db.execute(
            sql: "INSERT INTO replicaBinding (replicaId, signKey) VALUES (?, ?)", arguments: [Data(replica.bytes), Data(signKey)])
        mac.toggle(IntegrityTerm.replicaBinding(replica, signKey: signKey))
    }
}
