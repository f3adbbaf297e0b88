import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

/// Vault files made by CofferStore alone: no key hierarchy above it, so the
/// header's wrapped key and the MAC key are random bytes of the right length.
enum StoreFixture {
    static func header() -> VaultHeader {
        VaultHeader(
            formatVersion: VaultStore.formatVersion, vaultID: VaultID(bytes: Random.bytes(16))!,
            kdfMemoryKiB: FastKDF.parameters.memoryKiB, kdfIterations: FastKDF.parameters.iterations,
            kdfParallelism: FastKDF.parameters.parallelism, kdfSalt: Random.bytes(16), wrappedMasterKey: Random.bytes(72),
            createdAt: 1_767_225_600_000)
    }

    static func create(_ path: String, header: VaultHeader = header()) throws(StoreError) -> VaultStore {
        try VaultStore.create(
            path: path, header: header, replica: ReplicaID(bytes: Random.bytes(16))!, host: "coffer-store-tests",
            mac: VaultMAC(key: SecretBytes(copying: Random.bytes(32))))
    }

    /// Runs `sql` on the file at `path` through a connection of its own, as
    /// sqlite3 would (outside coffer).
    static func edit(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: sql) }
    }

    /// The StoreError `body` throws, nil (and a recorded issue) when it
    /// throws nothing or something else.
    static func storeError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> StoreError? {
        do {
            try body()
            Issue.record("expected a StoreError, got success", sourceLocation: sourceLocation)
        } catch let e as StoreError {
            return e
        } catch {
            Issue.record("expected a StoreError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
