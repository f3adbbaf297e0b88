import CofferSync
import Foundation
import GRDB

/// The `vault` row: identity, KDF parameters and the wrapped master key.
public struct VaultHeader: Sendable, Equatable {
    public var formatVersion: Int
    public var vaultID: VaultID
    public var kdfMemoryKiB: UInt32
    public var kdfIterations: UInt32
    public var kdfParallelism: UInt32
    public var kdfSalt: [UInt8]
    public var wrappedMasterKey: [UInt8]
    public var createdAt: Int64

    public init(
        formatVersion: Int, vaultID: VaultID, kdfMemoryKiB: UInt32, kdfIterations: UInt32,
        kdfParallelism: UInt32, kdfSalt: [UInt8], wrappedMasterKey: [UInt8], createdAt: Int64
    ) {
        self.formatVersion = formatVersion
        self.vaultID = vaultID
        self.kdfMemoryKiB = kdfMemoryKiB
        self.kdfIterations = kdfIterations
        self.kdfParallelism = kdfParallelism
        self.kdfSalt = kdfSalt
        self.wrappedMasterKey = wrappedMasterKey
        self.createdAt = createdAt
    }

    /// The binding the wrapped master key was made with, as the format
    /// number says (docs/key-hierarchy.md, "Wrapping the master key").
    public var wrapBinding: KeyHierarchy.WrapBinding {
        formatVersion >= VaultStore.boundWrapFormat ? .integrity : .legacy
    }
}

/// The clear-text columns of an item row.
public struct ItemRow: Sendable, Equatable {
    public var id: ItemID
    public var policy: SyncPolicy
    public var nameHash: [UInt8]?
    public var isDeleted: Bool
    public var hasConflict: Bool
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        id: ItemID, policy: SyncPolicy, nameHash: [UInt8]?, isDeleted: Bool, hasConflict: Bool,
        createdAt: Int64, updatedAt: Int64
    ) {
        self.id = id
        self.policy = policy
        self.nameHash = nameHash
        self.isDeleted = isDeleted
        self.hasConflict = hasConflict
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// The local replica: id and write counter.
public struct LocalReplica: Sendable, Equatable {
    public var id: ReplicaID
    public var counter: UInt64
    public var boundHost: String?
    public var boundInode: Int64?
}

/// A replica known to this vault and the highest counter seen from it.
public struct KnownReplica: Sendable, Equatable {
    public var id: ReplicaID
    public var counter: UInt64
    public var lastImportAt: Int64?
}

extension FieldVersion {
    /// A version from a `fieldVersion` or `fieldHistory` row (`SELECT *`).
    init(row: Row, table: String = "fieldVersion") throws {
        guard let replica = ReplicaID(bytes: try row.blob("replicaId", table: table, length: 16)) else {
            throw StoreError.damaged("replica id of wrong length")
        }
        let vectorBytes = try row.blob("vector", table: table)
        let vector: VersionVector
        do { vector = try VersionVector(decoding: vectorBytes) } catch {
            throw StoreError.damaged("\(table).vector is malformed")
        }
        self.init(
            dot: Dot(replica: replica, counter: try row.counter("counter", table: table, minimum: 1)),
            vector: vector,
            writtenAt: try row.int64("writtenAt", table: table),
            isTombstone: try row.bool("isTombstone", table: table),
            payload: Array(try row.blob("payload", table: table)))
    }
}
