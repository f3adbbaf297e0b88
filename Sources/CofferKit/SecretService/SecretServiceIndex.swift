import Foundation

/// What a running Secret Service knows of its items between requests: the
/// collections, the aliases, and the label and attributes of every item of them. While
/// no other process has committed to the vault file (its change stamp is
/// the same), a request reads nothing from the file; the service reports
/// its own writes (``written(_:in:)``, ``deleted(_:)``, ``invalidate()``).
/// After another process's commit (an edit by `coffer`, a sync), the
/// listing is read again and only the items whose last change differs
/// are decrypted again. Used from one thread.
public final class SecretServiceIndex: @unchecked Sendable {
    public let vault: Vault
    private var cache: [ItemID: (modified: Date, name: String, entry: SecretServiceItem)] = [:]
    private var snapshot: Snapshot?

    private struct Snapshot {
        var stamp: Int
        var collections: [SecretServiceCollection]
        var aliases: [String: String]
        var items: [String: [SecretServiceItem]]
    }

    public init(vault: Vault) {
        self.vault = vault
    }

    /// The collections, as ``Vault/secretServiceCollections()`` says.
    public func collections() throws(CofferError) -> [SecretServiceCollection] {
        try fresh().collections
    }

    /// The aliases, as ``Vault/secretServiceAliases()`` says.
    public func aliases() throws(CofferError) -> [String: String] {
        try fresh().aliases
    }

    /// Every item of each collection, by collection id, sorted by name.
    public func items() throws(CofferError) -> [String: [SecretServiceItem]] {
        try fresh().items
    }

    private func fresh() throws(CofferError) -> Snapshot {
        let stamp = try vault.secretServiceChangeStamp()
        if let s = snapshot, s.stamp == stamp { return s }
        let collections = try vault.secretServiceCollections()
        let s = Snapshot(stamp: stamp, collections: collections, aliases: try vault.secretServiceAliases(), items: try read(collections))
        snapshot = s
        return s
    }

    private func read(_ collections: [SecretServiceCollection]) throws(CofferError) -> [String: [SecretServiceItem]] {
        let listed = try vault.list()
        var out: [String: [SecretServiceItem]] = [:]
        var seen = Set<ItemID>()
        for summary in listed {
            guard let c = collections.first(where: { $0.contains(summary.name) }) else { continue }
            seen.insert(summary.id)
            if let hit = cache[summary.id], hit.modified == summary.updatedAt, hit.name == summary.name {
                out[c.id, default: []].append(hit.entry)
                continue
            }
            let item: Item
            do {
                item = try vault.item(named: "id:" + summary.id.hex)
            } catch  where error.kind == .itemNotFound {
                continue
            }
            let entry = vault.secretServiceEntry(item)
            cache[summary.id] = (summary.updatedAt, summary.name, entry)
            out[c.id, default: []].append(entry)
        }
        for id in cache.keys where !seen.contains(id) { cache[id] = nil }
        return out
    }

    /// The service wrote `item` (created or changed it) in `collection`.
    public func written(_ item: Item, in collection: SecretServiceCollection) {
        let entry = vault.secretServiceEntry(item)
        cache[item.id] = (item.updatedAt, item.name, entry)
        // In place: a copy of the snapshot would copy every item's entry.
        guard snapshot != nil else { return }
        for k in snapshot!.items.keys { snapshot!.items[k]?.removeAll { $0.id == item.id } }
        let at = snapshot!.items[collection.id, default: []].firstIndex { $0.name > item.name } ?? snapshot!.items[collection.id, default: []].endIndex
        snapshot!.items[collection.id, default: []].insert(entry, at: at)
    }

    /// The service deleted the item `id`.
    public func deleted(_ id: ItemID) {
        cache[id] = nil
        guard snapshot != nil else { return }
        for k in snapshot!.items.keys { snapshot!.items[k]?.removeAll { $0.id == id } }
    }

    /// Forgets the snapshot (the service changed the collections or
    /// aliases); the next request reads the listing again.
    public func invalidate() { snapshot = nil }

    /// Forgets everything (the vault was locked).
    public func clear() {
        cache = [:]
        snapshot = nil
    }
}
