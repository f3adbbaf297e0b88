import Foundation

/// What a running Secret Service knows of its items between requests: the
/// label and attributes of every item of its collections, read again for
/// an item only when its last change differs from what the index holds
/// (an edit by `coffer`, a merge by sync, a write of this service). A
/// search then decrypts nothing that did not change. Used from one thread.
public final class SecretServiceIndex: @unchecked Sendable {
    public let vault: Vault
    private var cache: [ItemID: (modified: Date, name: String, entry: SecretServiceItem)] = [:]

    public init(vault: Vault) {
        self.vault = vault
    }

    /// Every item of `collections`, by collection id, sorted by name.
    public func items(of collections: [SecretServiceCollection]) throws(CofferError) -> [String: [SecretServiceItem]] {
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

    /// Forgets what is cached (the vault was locked).
    public func clear() { cache = [:] }
}
