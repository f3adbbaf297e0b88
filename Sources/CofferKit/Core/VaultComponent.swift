import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// One concern of an unlocked vault (items, replica identity, replication,
/// conflicts, requirements, audit, interchange, key rotation, git
/// credentials), built on
/// the ``VaultCore`` it shares with every other component of the same
/// vault. A component is a value holding the core: making one costs
/// nothing, so components reach each other through the accessors below
/// (`identity.nextDot(…)`, `conflictResolution.itemConflicts(…)`).
///
/// A new capability gets a component of its own in a folder of its own,
/// with the façade's forwarders in `Vault+<Concern>.swift` beside it
/// (docs/architecture.md, "Where do I put…"); it does not add to ``Vault``
/// or ``VaultCore``.
package protocol VaultComponent: Sendable {
    var core: VaultCore { get }
}

// The core's state and operations, as every component uses them.
extension VaultComponent {
    package var file: VaultFile { core.file }
    package var path: String { core.path }
    package var vaultID: VaultID { core.vaultID }
    package var keys: VaultKeys { core.keys }
    package var store: VaultStore { core.store }
    var listingCache: ListingCache? { core.listingCache }

    package typealias Change = VaultCore.Change

    package func write<T>(_ body: (StoreConnection, VaultMAC) throws -> T) throws -> T { try core.write(body) }

    package func save(
        _ db: StoreConnection, row: ItemRow, old: ItemState?, new: ItemState, now: Int64, mac: VaultMAC,
        shown: [RegisterID: FieldPayload] = [:]
    ) throws {
        try core.save(db, row: row, old: old, new: new, now: now, mac: mac, shown: shown)
    }

    package func resolve(_ db: StoreConnection, _ name: String) throws -> ItemID { try core.resolve(db, name) }

    package func resolve(_ db: ReadConnection, _ name: String) throws -> ItemID { try core.resolve(db, name) }

    package func loadItem(_ db: StoreConnection, id: ItemID) throws -> (row: ItemRow, state: ItemState, record: ItemRecord)? {
        try core.loadItem(db, id: id)
    }

    package func loadItem(_ db: ReadConnection, id: ItemID) throws -> (row: ItemRow, state: ItemState, record: ItemRecord)? {
        try core.loadItem(db, id: id)
    }

    func seal(_ payload: FieldPayload, item: ItemID, register: RegisterID, dot: Dot, vector: VersionVector, at time: Int64, tombstone: Bool) -> FieldVersion {
        core.seal(payload, item: item, register: register, dot: dot, vector: vector, at: time, tombstone: tombstone)
    }

    func open(_ v: FieldVersion, item: ItemID, register: RegisterID) throws -> FieldPayload {
        try core.open(v, item: item, register: register)
    }

    package func registerID(field: String, item: ItemID) -> RegisterID { core.registerID(field: field, item: item) }

    func decode(_ state: ItemState, row: ItemRow) throws -> Item { try core.decode(state, row: row) }

    package func derivedRow(for state: ItemState, policy: SyncPolicy, createdAt: Int64, updatedAt: Int64) throws -> ItemRow {
        try core.derivedRow(for: state, policy: policy, createdAt: createdAt, updatedAt: updatedAt)
    }

    package func apply(_ changes: [Change], to state: inout ItemState, dot: Dot, at time: Int64, sealer: AEAD.BatchSealer? = nil) {
        core.apply(changes, to: &state, dot: dot, at: time, sealer: sealer)
    }

    package func sealRecord(
        state: ItemState, row: ItemRow, shown known: [RegisterID: FieldPayload] = [:], sealer: AEAD.BatchSealer? = nil
    ) throws -> [UInt8] {
        try core.sealRecord(state: state, row: row, shown: known, sealer: sealer)
    }

    func openRecord(_ sealed: [UInt8]?, item: ItemID, withVersions: Bool = true) throws -> ItemRecord {
        try core.openRecord(sealed, item: item, withVersions: withVersions)
    }

    func seal(_ content: ItemRecord.Content, row: ItemRow, sealer: AEAD.BatchSealer? = nil) -> [UInt8] {
        core.seal(content, row: row, sealer: sealer)
    }

    func check(_ record: ItemRecord, row: ItemRow) throws { try core.check(record, row: row) }

    func check(_ record: ItemRecord, row: ItemRow, state: ItemState) throws { try core.check(record, row: row, state: state) }

    func checkVaultMAC(_ db: StoreConnection) throws { try core.checkVaultMAC(db) }

    // MARK: The components

    package var items: Items { Items(core: core) }
    package var identity: ReplicaIdentity { ReplicaIdentity(core: core) }
    package var gitCredentials: GitCredentials { GitCredentials(core: core) }
    package var sshKeys: SSHKeys { SSHKeys(core: core) }
    package var replication: Replication { Replication(core: core) }
    package var keyRotation: KeyRotation { KeyRotation(core: core) }
    package var interchange: Interchange { Interchange(core: core) }
    package var auditing: Auditing { Auditing(core: core) }
    package var requirements: CredentialRequirements { CredentialRequirements(core: core) }
    package var conflictResolution: ConflictResolution { ConflictResolution(core: core) }
    package var secretServiceStorage: SecretServiceStorage { SecretServiceStorage(core: core) }
    package var sharing: Sharing { Sharing(core: core) }
}
