import CofferStore
import CofferSync
import Foundation

/// Requirements: what credentials each source (an API, a service) needs,
/// registered manifests, validation of a credential against its source's
/// rules, and the choice of the item that serves a source
/// (docs/requirements.md). The façade's forwarders are in
/// Requirements/Vault+Requirements.swift.
package struct CredentialRequirements: VaultComponent {
    package let core: VaultCore
}

/// Whether one source of a manifest can be used, and why not.
public struct SourceStatus: Sendable, Equatable {
    /// The four outcomes of `coffer check`.
    public enum State: String, Sendable, CaseIterable {
        /// A credential is stored, passes its rules and has not expired.
        case ready
        /// No item (or not every needed field) for the source.
        case missing
        /// A stored value fails the source's format rule.
        case invalid
        /// The credential's expiry date has passed.
        case expired
    }

    /// The source.
    public var requirement: SourceRequirement
    /// The outcome.
    public var state: State
    /// Names of the items that supply the credential (empty when missing).
    public var items: [String]
    /// The earliest expiry among those items.
    public var expires: Day?
    /// What is wrong, one phrase each; never contains a value.
    public var problems: [String]

    /// True when ``state`` is ``State/ready``.
    public var isReady: Bool { state == .ready }
}

/// A registered requirements manifest stored in the vault.
public struct RegisteredRequirements: Sendable, Equatable {
    /// The name it was registered under.
    public var name: String
    /// The parsed manifest; nil when the stored text no longer parses
    /// (e.g. written by a newer coffer), see ``problem``.
    public var manifest: RequirementsManifest?
    /// Why the stored manifest could not be read.
    public var problem: String?
    /// When it was last registered or replaced.
    public var updatedAt: Date
}

extension CredentialRequirements {
    package static func isReserved(_ name: String) -> Bool { name.hasPrefix(Vault.reservedNamePrefix) }

    static func checkNotReserved(_ name: String) throws(CofferError) {
        guard !isReserved(name) else {
            throw CofferError(.usage, "names starting with '\(Vault.reservedNamePrefix)' are reserved for coffer's own data", hint: "choose another name")
        }
    }

    // MARK: Finding a source's credential

    /// Live item ids by source, decrypting only the source register of
    /// each item (one AEAD open per item, not five as `list()` does).
    func sourceIndex() throws(CofferError) -> [String: [ItemID]] {
        try CofferError.wrap {
            try store.read { db in
                // From the item records (checked), not the field versions.
                var out: [String: [ItemID]] = [:]
                try keys.record.keepingReadable {
                    for l in try Queries.listedItems(db) {
                        let record = try openRecord(l.record, item: l.row.id, withVersions: false)
                        try check(record, row: l.row)
                        guard !record.isDeleted, let source = record.source else { continue }
                        out[source, default: []].append(l.row.id)
                    }
                }
                return out
            }
        }
    }

    /// The item with this id, decrypted (no name or prefix lookup).
    func item(id: ItemID) throws(CofferError) -> Item {
        try CofferError.wrap {
            try store.read { db in
                guard let (row, state, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item with id \(id.hex)") }
                return try decode(state, row: row)
            }
        }
    }

    /// Live items whose source is `sourceID`, decrypted.
    func items(forSource sourceID: String, in index: [String: [ItemID]]? = nil) throws(CofferError) -> [Item] {
        let ids: [ItemID]
        if let index { ids = index[sourceID] ?? [] } else { ids = try sourceIndex()[sourceID] ?? [] }
        var out: [Item] = []
        for id in ids {
            let item = try item(id: id)
            if !Vault.isReserved(item.name) { out.append(item) }
        }
        return out.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    static func typeRank(_ t: ItemType, field: String) -> Int {
        let order: [ItemType]
        switch field {
        case "key": order = [.apiKey, .apiKeyWithEmail]
        case "email": order = [.email, .apiKeyWithEmail]
        case "password": order = [.login]
        default: order = []
        }
        return order.firstIndex(of: t) ?? order.count
    }

    /// The one order every credential lookup uses among equally suitable
    /// items: not expired before expired, then the most recently updated,
    /// then (a tie) the smaller id.
    static func isPreferred(_ a: Item, over b: Item, today: Day) -> Bool {
        let ea = a.isExpired(today: today)
        let eb = b.isExpired(today: today)
        if ea != eb { return !ea }
        if a.updatedAt != b.updatedAt { return a.updatedAt > b.updatedAt }
        return a.id < b.id
    }

    /// The item among `items` preferred by ``isPreferred(_:over:today:)``.
    static func preferred(_ items: [Item], today: Day) -> Item? {
        items.min { isPreferred($0, over: $1, today: today) }
    }

    /// The item of exactly `type` holding every field of `fields` that
    /// the lookups (``status(of:today:)``, ``credential(forSource:field:today:)``,
    /// ``CredentialManager``'s retrieve) pick for that type; when none holds
    /// them all, the preferred item of that type. `CredentialManager.store`
    /// writes to this item, so a store is what the next retrieve returns.
    static func credentialItem(_ items: [Item], type: ItemType, holding fields: [String], today: Day) -> Item? {
        let ofType = items.filter { $0.type == type }
        return preferred(ofType.filter { i in fields.allSatisfy { i.field($0) != nil } }, today: today)
            ?? preferred(ofType, today: today)
    }

    /// The best item among `items` holding `field`: the preferred type
    /// first (api-key for `key`, email for `email`, then
    /// api-key-with-email, then any other), then by
    /// ``isPreferred(_:over:today:)`` (not expired before expired, then
    /// the most recently updated).
    static func best(_ items: [Item], holding field: String, today: Day) -> Item? {
        items.filter { $0.field(field) != nil }.min { a, b in
            let ra = typeRank(a.type, field: field)
            let rb = typeRank(b.type, field: field)
            if ra != rb { return ra < rb }
            return isPreferred(a, over: b, today: today)
        }
    }

    package func credential(forSource sourceID: String, field: String, today: Day = .today) throws(CofferError) -> (item: Item, value: String)? {
        guard let item = CredentialRequirements.best(try items(forSource: sourceID), holding: field, today: today), let f = item.field(field) else {
            return nil
        }
        return (item, f.value)
    }

    /// The api-key-with-email item holding both a key and an email that an
    /// api-key-with-email lookup uses before separate items.
    static func bothItem(_ items: [Item], today: Day) -> Item? {
        preferred(items.filter { $0.type == .apiKeyWithEmail && $0.field("key") != nil && $0.field("email") != nil }, today: today)
    }

    package func status(of requirement: SourceRequirement, today: Day = .today) throws(CofferError) -> SourceStatus {
        try status(of: requirement, today: today, index: nil)
    }

    func status(of requirement: SourceRequirement, today: Day, index: [String: [ItemID]]?) throws(CofferError) -> SourceStatus {
        let all = try items(forSource: requirement.id, in: index)
        var chosen: [Item] = []
        var missing: [String] = []
        if requirement.type == .apiKeyWithEmail, let both = CredentialRequirements.bothItem(all, today: today) {
            chosen = [both]
        } else if requirement.type == .custom {
            if let any = CredentialRequirements.preferred(all, today: today) {
                chosen = [any]
            } else {
                missing.append("no item")
            }
        } else {
            for field in requirement.type.requiredFields {
                if let item = CredentialRequirements.best(all, holding: field, today: today) {
                    if !chosen.contains(where: { $0.id == item.id }) { chosen.append(item) }
                } else {
                    missing.append(field)
                }
            }
        }
        if !missing.isEmpty {
            let what =
                missing == ["no item"]
                ? "no item has source '\(requirement.id)'"
                : "no item with source '\(requirement.id)' has " + missing.map { "\(Article.a($0)) \($0)" }.joined(separator: " or ") + " field"
            return SourceStatus(requirement: requirement, state: .missing, items: chosen.map(\.name), expires: nil, problems: [what])
        }
        var problems: [String] = []
        var checked = Set<String>()
        let needed = requirement.type.requiredFields
        for item in chosen {
            for f in item.fields where !checked.contains(f.name) {
                guard needed.contains(f.name) || requirement.fieldFormats[f.name] != nil else { continue }
                checked.insert(f.name)
                for p in requirement.problems(field: f.name, value: f.value) {
                    problems.append("\(f.name) of '\(item.name)' \(p)")
                }
            }
        }
        let expiries = chosen.compactMap(\.expires)
        let earliest = expiries.min()
        var state = SourceStatus.State.ready
        if !problems.isEmpty {
            state = .invalid
        } else if let e = earliest, e < today {
            state = .expired
            problems.append("expired on \(e)")
        }
        return SourceStatus(requirement: requirement, state: state, items: chosen.map(\.name), expires: earliest, problems: problems)
    }

    package func check(_ manifest: RequirementsManifest, today: Day = .today) throws(CofferError) -> [SourceStatus] {
        var out: [SourceStatus] = []
        let index = try sourceIndex()
        for s in manifest.sources { out.append(try status(of: s, today: today, index: index)) }
        return out
    }

    // MARK: Registered manifests

    /// The one item holding every registered manifest: a `custom` item
    /// whose fields are named after the manifests and hold their JSON. It
    /// is found through the name index (no scan of the vault), and
    /// manifests registered on different replicas merge field by field.
    static let registryName = ".coffer/requirements"

    /// The registry item, or nil. If two replicas each created one before
    /// syncing, there are several: reading unions their fields (the oldest
    /// item wins a name); with `heal`, the others' fields are copied into
    /// the oldest and the others are deleted.
    func requirementsRegistry(heal: Bool) throws(CofferError) -> Item? { try items.registry(named: CredentialRequirements.registryName, heal: heal) }

    static func checkManifestName(_ name: String) throws(CofferError) {
        guard !name.isEmpty, name.count <= 128,
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) })
        else {
            throw CofferError(
                .usage, "invalid manifest name '\(name)': use letters, digits, '.', '_' or '-'", remedy: .init(.nameManifest, "give the manifest a name"))
        }
    }

    @discardableResult
    package func registerRequirements(_ data: Data, name: String, file: String) throws(CofferError) -> Bool {
        _ = try RequirementsManifest.parse(data, file: file)
        try CredentialRequirements.checkManifestName(name)
        guard let text = String(data: data, encoding: .utf8) else {
            throw CofferError(.badData, "\(file): not UTF-8 text")
        }
        let field = Field(name: name, value: text, isSecret: false)
        if let registry = try requirementsRegistry(heal: true) {
            var e = ItemEdit()
            e.setFields = [field]
            try items.edit("id:" + registry.id.hex, e)
            return registry.field(name) != nil
        }
        _ = try items.add([ItemDraft(name: CredentialRequirements.registryName, type: .custom, fields: [field])], allowReserved: true)
        return false
    }

    package func registeredRequirements() throws(CofferError) -> [RegisteredRequirements] {
        guard let registry = try requirementsRegistry(heal: false) else { return [] }
        var out: [RegisteredRequirements] = []
        for f in registry.fields {
            do {
                let m = try RequirementsManifest.parse(Data(f.value.utf8), file: "registered manifest '\(f.name)'")
                out.append(RegisteredRequirements(name: f.name, manifest: m, problem: nil, updatedAt: registry.updatedAt))
            } catch {
                out.append(RegisteredRequirements(name: f.name, manifest: nil, problem: error.message, updatedAt: registry.updatedAt))
            }
        }
        return out.sorted { $0.name < $1.name }
    }

    package func registeredRequirementsText(named name: String) throws(CofferError) -> String {
        guard let f = try requirementsRegistry(heal: false)?.field(name) else {
            throw CofferError(
                .itemNotFound, "no registered requirements manifest named '\(name)'", remedy: .init(.listManifests, "list the registered manifests"))
        }
        return f.value
    }

    package func removeRequirements(named name: String) throws(CofferError) {
        guard let registry = try requirementsRegistry(heal: true), registry.field(name) != nil else {
            throw CofferError(
                .itemNotFound, "no registered requirements manifest named '\(name)'", remedy: .init(.listManifests, "list the registered manifests"))
        }
        var e = ItemEdit()
        e.unsetFields = [name]
        try items.edit("id:" + registry.id.hex, e)
    }

    package func requirement(forSource sourceID: String, manifest: RequirementsManifest? = nil) throws(CofferError) -> SourceRequirement? {
        if let manifest { return manifest.source(sourceID) }
        for r in try registeredRequirements() {
            if let s = r.manifest?.source(sourceID) { return s }
        }
        return nil
    }

    package func validate(fields: [Field], type: ItemType, source: String?, manifest: RequirementsManifest? = nil) throws(CofferError) -> CredentialCheck {
        let req = try source.map { s throws(CofferError) in try requirement(forSource: s, manifest: manifest) } ?? nil
        return CredentialValidation.check(fields: fields, type: type, source: source, requirement: req)
    }
}
