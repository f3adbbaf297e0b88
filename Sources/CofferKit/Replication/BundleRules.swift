import CofferStore
import CofferSync
import Foundation

/// The validation rules that need the receiving vault (docs/sync.md
/// §Hostile bundles). ``BundleReader`` checks the rules that need only the
/// bundle; these run in the importer, before the bundle's transaction
/// commits, so a bundle that breaks one is refused whole.
struct ReceiverRules: Sendable {
    let header: BundleHeader
    let path: String
    /// This replica's id and write counter.
    let localReplica: ReplicaID
    let localCounter: UInt64
    /// Where a claim on this replica's writes above its counter is noted
    /// before `local-replica-bound` is thrown (the import then takes a new
    /// replica id and merges: ``Vault/importBundle(at:progress:)``); nil
    /// to note nothing. `previewing`: a dry run, which reports what the
    /// import would do (take a new id) instead of refusing.
    let ownClaims: OwnClaimProbe?
    let previewing: Bool

    init(header: BundleHeader, path: String, db: StoreConnection, ownClaims: OwnClaimProbe? = nil, previewing: Bool = false) throws {
        self.header = header
        self.path = path
        let local = try Queries.localReplica(db)
        localReplica = local.id
        localCounter = local.counter
        self.ownClaims = ownClaims
        self.previewing = previewing
    }

    /// `future-bundle`: a bundle dated far ahead of this machine's clock
    /// would let its versions win every conflict's shown value.
    func checkHeader(now: Int64) throws {
        if header.createdAt > now &+ BundleValidation.clockSkew {
            throw CofferError.bundle(
                .ruleBroken(
                    .futureBundle,
                    "it was created at \(header.createdAt) ms, more than a day after this machine's clock (\(now) ms)"),
                path: path)
        }
    }

    /// `local-replica-bound`: a version claiming more of this replica's
    /// writes than it made (or than the exporter says it saw, a restored
    /// backup) would make this replica's next write carry a vector that
    /// does not hold its own dot exactly. Such a claim is a key holder's
    /// (or a bug's): the import notes it and takes a new replica id before
    /// merging (docs/sync.md, "Hostile bundles").
    func check(record state: ItemState) throws {
        let bound = max(localCounter, header.summary[localReplica])
        for versions in state.registers.values {
            for v in versions where v.vector[localReplica] > bound {
                if previewing { continue }
                ownClaims?.note(v.vector[localReplica])
                throw CofferError.bundle(
                    .ruleBroken(
                        .localReplicaBound,
                        "item \(state.id.hex.prefix(8))… holds a version that saw write \(v.vector[localReplica]) of this replica, which has written \(localCounter)"
                    ),
                    path: path)
            }
        }
    }

    /// `mutual-supersession`: an incoming version and a held one that
    /// each contain the other's dot would both be dropped by the merge.
    func check(incoming: ItemState, held: ItemState) throws {
        for (rid, versions) in incoming.registers {
            guard let old = held.registers[rid] else { continue }
            for v in versions {
                for w in old where v.dot != w.dot && v.vector.contains(w.dot) && w.vector.contains(v.dot) {
                    throw CofferError.bundle(
                        .ruleBroken(
                            .mutualSupersession,
                            "item \(incoming.id.hex.prefix(8))… holds version \(v.dot), which and the held version \(w.dot) each contain the other"),
                        path: path)
                }
            }
        }
    }
}

/// The highest claim on the importing replica's writes above its counter
/// that an import met (``ReceiverRules/check(record:)``, which runs on the
/// import pipeline's decoding thread).
final class OwnClaimProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64?

    func note(_ claim: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        value = max(value ?? 0, claim)
    }

    var highest: UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

extension Replication {
    /// Decrypts an incoming version and checks its payload against the
    /// rules `register-name`, `text-value` and `empty-tombstone`.
    func openIncoming(_ v: FieldVersion, item: ItemID, register rid: RegisterID, path: String) throws -> FieldPayload {
        let payload: FieldPayload
        do { payload = try open(v, item: item, register: rid) } catch {
            throw CofferError(
                .badData, "\(path) holds an item version that fails authentication under this vault's key",
                hint: "the exporting vault is damaged; nothing was imported")
        }
        do { try BundleValidation.check(payload: payload, version: v, register: rid, item: item, fieldIDKey: keys.fieldID) } catch {
            throw CofferError.bundle(error, path: path)
        }
        return payload
    }
}
