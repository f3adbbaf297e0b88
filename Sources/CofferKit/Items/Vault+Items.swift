import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's item operations: each is ``Items``'.
extension Vault {
    /// Stores a new item. Fails with ``CofferError/Kind/duplicateName`` if a
    /// live item already has the name.
    @discardableResult
    public func add(_ draft: ItemDraft) throws(CofferError) -> Item {
        try items.add(draft)
    }

    /// Stores several new items in one transaction (all or none), each
    /// its own write.
    @discardableResult
    public func add(_ drafts: [ItemDraft]) throws(CofferError) -> [Item] {
        try items.add(drafts)
    }

    /// The item called `name` (or `id:HEX`), decrypted.
    public func item(named name: String) throws(CofferError) -> Item {
        try items.item(named: name)
    }

    /// Whether a live item has this name.
    public func contains(_ name: String) throws(CofferError) -> Bool {
        try items.contains(name)
    }

    /// Every live item's name, type, tags and expiry (field values are not
    /// decrypted), sorted by name. Items under ``reservedNamePrefix`` (the
    /// vault's own data, such as registered requirements manifests) are
    /// left out.
    public func list() throws(CofferError) -> [ItemSummary] {
        try items.list()
    }

    /// The nearest live item name to `name` (a likely typo), for the hint
    /// of an `itemNotFound` error (``CofferError/missingName``). Reads every
    /// item's sealed record: call it only when a person will read it.
    public func suggestion(forMissing name: String) -> String? {
        items.suggestion(forMissing: name)
    }

    /// What a person probably meant by `name`, which no live item has: a
    /// typo of a name, items whose last path component it is, or an item
    /// whose name differs only by division slashes (``MissingNameSuggestion``).
    /// Reads every item's sealed record, like ``suggestion(forMissing:)``:
    /// call it only when a person will read the answer.
    public func suggestions(forMissing name: String) -> MissingNameSuggestion? {
        items.suggestions(forMissing: name)
    }

    /// For an ``CofferError/Kind/itemNotFound`` error about to be shown to
    /// a person: the error to show instead when the vault holds versions of
    /// an item that has no item row. Deleting an `item` row outside coffer
    /// takes its name hash with it, so the lookup that failed cannot tell
    /// that item from a name never used; this can, at the cost of one seek
    /// per item id of the version tables (``Queries/itemWithoutRow(_:)``).
    /// Call it only when a person will read the error, like
    /// ``suggestion(forMissing:)``: a lookup stays O(1) in the vault's size.
    public func tamperingBehindMissingItem() -> CofferError? {
        items.tamperingBehindMissingItem()
    }

    /// Applies `edit` to the item as one write.
    @discardableResult
    public func edit(_ name: String, _ original: ItemEdit) throws(CofferError) -> Item {
        try items.edit(name, original)
    }

    /// Deletes the item: a delete marker whose vector covers everything
    /// this replica has seen of it. Field versions stay (encrypted) so a
    /// concurrent edit elsewhere can still bring the item back.
    public func delete(_ name: String) throws(CofferError) {
        try items.delete(name)
    }

    /// Every version of every field of the item, oldest first: superseded
    /// ones from the history table and the current ones.
    public func history(_ name: String) throws(CofferError) -> [HistoryEntry] {
        try items.history(name)
    }

    /// The raw replicated state of an item (for tests and sync code).
    public func state(of name: String) throws(CofferError) -> ItemState {
        try items.state(of: name)
    }

    /// This file's replica id.
    public func replicaID() throws(CofferError) -> ReplicaID {
        try items.replicaID()
    }
}

// Finding, moving and copying items.
extension Vault {
    /// ``find(_:)`` over a listing already read.
    package static func find(_ term: String, in items: [ItemSummary]) throws(CofferError) -> [FoundItem] {
        try Items.find(term, in: items)
    }

    /// Items whose name, tags, source, username or URL contain `term`,
    /// case-insensitively. Secret values are never searched (nor
    /// decrypted).
    public func find(_ term: String) throws(CofferError) -> [FoundItem] {
        try items.find(term)
    }

    /// The (old, new) names `mv`/`cp` act on: one item, or with `from`
    /// ending in `/` every item under that prefix, renamed under `to`
    /// (which then must end in `/` too).
    public func plan(from: String, to: String) throws(CofferError) -> [(from: String, to: String)] {
        try items.plan(from: from, to: to)
    }

    /// Renames items as one transaction: either every rename happens or
    /// none. Each is an ordinary write of the item's name register, so it
    /// syncs like any edit.
    public func move(_ pairs: [(from: String, to: String)]) throws(CofferError) {
        try items.move(pairs)
    }

    /// Copies items (new ids, same fields, tags, source, expiry, type,
    /// policy and variable names) as one transaction.
    public func copy(_ pairs: [(from: String, to: String)]) throws(CofferError) {
        try items.copy(pairs)
    }
}
