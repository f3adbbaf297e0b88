import CofferStore
import CofferSync

extension Replication {
    /// The summary a bundle header may claim: what a receiver will have
    /// seen once it has imported the bundle.
    ///
    /// The vault's own summary says "every write of replica R up to
    /// counter n is held here (or superseded by something held here)". A
    /// bundle leaves out local-only items, so that claim is true for the
    /// receiver only for replicas none of whose writes sit in a local-only
    /// item. Our own writes are exempt: a local-only item of ours that is
    /// later switched to `sync` is written again under new dots. For any
    /// other replica whose writes appear in a local-only item (an item that
    /// was synced and then made local-only here), the claim is dropped, so
    /// receivers take those writes from their author's bundles.
    static func exportableSummary(_ db: StoreConnection) throws -> VersionVector {
        var summary = try Queries.summary(db)
        let me = try Queries.localReplica(db).id
        // Only the local-only items' ids: every no-op `sync` computes this,
        // and reading every item row (records included) cost most of it.
        for id in try Queries.itemIDs(db, policy: .localOnly) {
            for versions in try Queries.itemState(db, id: id).registers.values {
                for v in versions {
                    for entry in v.vector.entries where entry.replica != me {
                        summary[entry.replica] = 0
                    }
                }
            }
        }
        return summary
    }
}
