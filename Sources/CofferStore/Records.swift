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

    init(row: Row) throws {
        guard let id = ItemID(bytes: (row["itemId"] as Data)) else {
            throw StoreError.database("item id of wrong length")
        }
        self.id = id
        policy = SyncPolicy(rawValue: row["policy"]) ?? .sync
        nameHash = (row["nameHash"] as Data?).map { Array($0) }
        isDeleted = row["isDeleted"]
        hasConflict = row["hasConflict"]
        createdAt = row["createdAt"]
        updatedAt = row["updatedAt"]
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
    init(row: Row) throws {
        guard let replica = ReplicaID(bytes: row["replicaId"] as Data) else {
            throw StoreError.database("replica id of wrong length")
        }
        let vectorBytes: Data = row["vector"]
        let vector: VersionVector
        do { vector = try VersionVector(decoding: vectorBytes) } catch {
            throw StoreError.database("stored version vector is malformed")
        }
        let counter: Int64 = row["counter"]
        self.init(
            dot: Dot(replica: replica, counter: UInt64(counter)),
            vector: vector,
            writtenAt: row["writtenAt"],
            isTombstone: row["isTombstone"],
            payload: Array(row["payload"] as Data))
    }
}
