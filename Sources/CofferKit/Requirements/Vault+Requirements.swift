import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's requirements operations: each is ``CredentialRequirements``'s.
extension Vault {
    /// Item names starting with this are the vault's own data (the
    /// registered requirements manifests, `.coffer/requirements`): `list()` hides them and `add`/`edit
    /// --rename` refuse them. They are ordinary encrypted items otherwise,
    /// so they sync in bundles like any item.
    public static let reservedNamePrefix = ".coffer/"

    /// Whether `name` is under ``reservedNamePrefix``.
    public static func isReserved(_ name: String) -> Bool { CredentialRequirements.isReserved(name) }

    /// The stored value of `field` (`key`, `email`, `password`, …) for the
    /// source `sourceID`, chosen as ``status(of:today:)`` does, with the
    /// item it came from; nil when no live item with that source has the
    /// field.
    public func credential(forSource sourceID: String, field: String, today: Day = .today) throws(CofferError) -> (item: Item, value: String)? {
        try requirements.credential(forSource: sourceID, field: field, today: today)
    }

    /// Whether `requirement`'s source is ready, missing, invalid or expired.
    ///
    /// Lookup: the live items whose `source` equals the source id. An
    /// `api-key` source needs a `key` field, `email` an `email` field,
    /// `login` a `password` field, `custom` any item. An
    /// `api-key-with-email` source uses one api-key-with-email item holding
    /// both, else a `key` and an `email` from separate items. See
    /// ``best(_:holding:today:)`` for which item wins when several qualify.
    public func status(of requirement: SourceRequirement, today: Day = .today) throws(CofferError) -> SourceStatus {
        try requirements.status(of: requirement, today: today)
    }

    /// The status of every source of `manifest`, in manifest order.
    public func check(_ manifest: RequirementsManifest, today: Day = .today) throws(CofferError) -> [SourceStatus] {
        try requirements.check(manifest, today: today)
    }

    /// Stores a manifest in the vault under `name` (replacing one
    /// registered under the same name). All registered manifests live,
    /// encrypted, in the hidden item `.coffer/requirements` (one field per
    /// manifest), which syncs like any item. `data` must parse; `file`
    /// names it in errors. Returns whether it replaced one.
    @discardableResult
    public func registerRequirements(_ data: Data, name: String, file: String) throws(CofferError) -> Bool {
        try requirements.registerRequirements(data, name: name, file: file)
    }

    /// Every registered manifest, sorted by name.
    public func registeredRequirements() throws(CofferError) -> [RegisteredRequirements] {
        try requirements.registeredRequirements()
    }

    /// The stored text of the manifest registered as `name`.
    public func registeredRequirementsText(named name: String) throws(CofferError) -> String {
        try requirements.registeredRequirementsText(named: name)
    }

    /// Removes the manifest registered as `name` (a change that syncs).
    public func removeRequirements(named name: String) throws(CofferError) {
        try requirements.removeRequirements(named: name)
    }

    /// The requirement for `sourceID`: from `manifest` when given, else
    /// from the registered manifests (by name order; the first that
    /// declares the source wins).
    public func requirement(forSource sourceID: String, manifest: RequirementsManifest? = nil) throws(CofferError) -> SourceRequirement? {
        try requirements.requirement(forSource: sourceID, manifest: manifest)
    }

    /// Checks values about to be written for an item with source `source`
    /// against its requirement (from `manifest`, else the registered
    /// manifests) and the built-in catalogue. See ``CredentialValidation``.
    public func validate(fields: [Field], type: ItemType, source: String?, manifest: RequirementsManifest? = nil) throws(CofferError) -> CredentialCheck {
        try requirements.validate(fields: fields, type: type, source: source, manifest: manifest)
    }
    /// Every live item that could answer a lookup of `type` for
    /// `sourceID`, best first: the first is the one ``CredentialManager``,
    /// ``Coffer/string(forSource:type:)`` and `coffer check` use.
    ///
    /// The order (the same on every replica, so two machines holding the
    /// same items choose the same one):
    /// 1. for `api-key-with-email`, items of that type holding both a key
    ///    and an email come first;
    /// 2. the item type made for the field (`api-key` for a key, `email`
    ///    for an email, `login` for a password), then `api-key-with-email`,
    ///    then any other type;
    /// 3. not expired before expired;
    /// 4. the most recently updated first;
    /// 5. the smaller item id (a tie that only concurrent writes can make).
    public func candidates(forSource sourceID: String, type: CredentialType, today: Day = .today) throws(CofferError) -> [Item] {
        try requirements.candidates(forSource: sourceID, type: type, today: today)
    }
}
