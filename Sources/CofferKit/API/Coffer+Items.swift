import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Coffer {
    /// What ``Coffer/set(_:for:kind:source:expires:policy:)`` stores: the
    /// item type, which field the value goes into, and the other fields.
    public enum Kind: Sendable, Hashable {
        /// An `api-key` item; the value is its `key` (secret).
        case apiKey
        /// A `login` item; the value is its `password` (secret), with a
        /// `username` and, when given, a `url` (neither secret).
        case login(username: String, url: String? = nil)
        /// A `note` item; the value is its `notes` (secret).
        case note
        /// A `custom` item; the value is its `value` field (secret), plus
        /// `fields` (secret when the name says so: key, token, password…).
        case generic(fields: [String: String] = [:])

        var itemType: ItemType {
            switch self {
            case .apiKey: return .apiKey
            case .login: return .login
            case .note: return .note
            case .generic: return .custom
            }
        }

        /// The fields written for `value`, in a stable order.
        func fields(value: String) -> [Field] {
            switch self {
            case .apiKey: return [Field(name: "key", value: value, isSecret: true)]
            case .note: return [Field(name: "notes", value: value, isSecret: true)]
            case .login(let username, let url):
                var out = [
                    Field(name: "username", value: username, isSecret: false),
                    Field(name: "password", value: value, isSecret: true),
                ]
                if let url { out.append(Field(name: "url", value: url, isSecret: false)) }
                return out
            case .generic(let extra):
                return [Field(name: "value", value: value, isSecret: true)]
                    + extra.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value, isSecret: ItemType.custom.defaultSecrecy(of: $0.key)) }
            }
        }
    }

    // MARK: Writing

    /// Stores `value` under the item `name` (a path such as `work/openai`),
    /// creating the item or updating it in one write.
    ///
    /// An existing item takes the kind's type and fields; fields the kind
    /// does not mention (an `otp` field added with `coffer edit`, a `url`
    /// when `url` is nil) are kept. `source`, `expires` and `policy` change
    /// the item only when given.
    ///
    /// The value is checked first: against the source's rule in the
    /// vault's registered requirements manifests (failing →
    /// ``CofferError/Kind/invalidCredential``, nothing stored) and against
    /// the catalogue of well-known key formats. What does not stop the
    /// write comes back as warnings, including ``CredentialWarning/Kind/ambiguousSource``
    /// when another item already holds a credential for the same source.
    /// - Throws: ``CofferError/Kind/usage`` (empty value, bad name),
    ///   ``CofferError/Kind/invalidCredential``, ``CofferError/Kind/ambiguousName``,
    ///   ``CofferError/Kind/busy``, ``CofferError/Kind/ioError``.
    @discardableResult
    public func set(
        _ value: String, for name: String, kind: Kind = .apiKey, source: String? = nil, expires: Day? = nil,
        policy: SyncPolicy? = nil
    ) async throws(CofferError) -> [CredentialWarning] {
        try await store(value, for: name, type: kind.itemType, fields: kind.fields(value: value), source: source, expires: expires, policy: policy)
    }

    /// Stores `fields` (`value` among them) as the item `name` of `type`,
    /// creating or updating it in one write (``set(_:for:kind:source:expires:policy:)``).
    func store(
        _ value: String, for name: String, type: ItemType, fields: [Field], source: String?, expires: Day?, policy: SyncPolicy?
    ) async throws(CofferError) -> [CredentialWarning] {
        guard !value.isEmpty else {
            throw CofferError(.usage, "the value for '\(name)' is empty", hint: "to delete the item, call remove(_:)")
        }
        if let source, source.isEmpty { throw CofferError(.usage, "a source id cannot be empty") }
        let normalized = try Vault.normalizeName(vaultName(name))
        return try await write { (vault) throws(CofferError) -> [CredentialWarning] in
            let existing = try vault.contains(normalized) ? try vault.item(named: normalized) : nil
            let effectiveSource = source ?? existing?.source
            let check = try vault.validate(fields: fields, type: type, source: effectiveSource)
            if !check.passes {
                let refusal = check.refusal
                throw CofferError(
                    refusal.kind, refusal.message, remedy: .init(.checkValue, "check the value; the rule is in the registered requirements manifest"))
            }
            var warnings = check.typedWarnings
            let stored: Item
            if existing != nil {
                stored = try Coffer.update(vault, normalized, type: type, fields: fields, source: source, expires: expires, policy: policy)
            } else {
                do throws(CofferError) {
                    stored = try vault.add(
                        ItemDraft(name: normalized, type: type, fields: fields, source: source, expires: expires, policy: policy ?? .sync))
                } catch  where error.kind == .duplicateName {
                    // Another process created it meanwhile: update it.
                    stored = try Coffer.update(vault, normalized, type: type, fields: fields, source: source, expires: expires, policy: policy)
                }
            }
            if stored.isExpired(), let day = stored.expires {
                warnings.append(CredentialWarning(.expired, "'\(stored.name)' expired on \(day); lookups by source prefer unexpired items"))
            }
            if let s = stored.source, let type = CredentialType(itemType: stored.type),
                let w = CredentialRequirements.ambiguityWarning(try vault.candidates(forSource: s, type: type), sourceID: s)
            {
                warnings.append(w)
            }
            return warnings
        }
    }

    static func update(
        _ vault: Vault, _ name: String, type: ItemType, fields: [Field], source: String?, expires: Day?, policy: SyncPolicy?
    ) throws(CofferError) -> Item {
        var edit = ItemEdit()
        edit.type = type
        edit.setFields = fields
        if let source { edit.source = .some(source) }
        if let expires { edit.expires = .some(expires) }
        edit.policy = policy
        return try vault.edit(name, edit)
    }

    /// Deletes the item `name` (the delete syncs like any edit). Returns
    /// false when there was no such item.
    @discardableResult
    public func remove(_ name: String) async throws(CofferError) -> Bool {
        let target = try vaultName(name)
        let checkScope = !prefix.isEmpty && target.hasPrefix("id:")
        return try await write { [self] (vault) throws(CofferError) -> Bool in
            do throws(CofferError) {
                // An id names an item of any folder: delete only this service's.
                if checkScope, !isInScope(try vault.item(named: target).name) { return false }
                try vault.delete(target)
                return true
            } catch  where error.kind == .itemNotFound {
                return false
            }
        }
    }

    // MARK: Reading

    /// The value of the item `name`: its `field`, or when nil its primary
    /// field (`key`, `password`, `notes`, `email`; for a custom item the
    /// first secret field). Nil when there is no such item or field.
    /// - Throws: ``CofferError/Kind/ambiguousName`` when two items share the
    ///   name (after a sync), vault errors.
    public func string(for name: String, field: String? = nil) async throws(CofferError) -> String? {
        guard let item = try await item(named: name) else { return nil }
        if let field { return item.field(field)?.value }
        return item.primaryField?.value
    }

    /// The item `name` (or `id:HEX`), decrypted; nil when there is none.
    public func item(named name: String) async throws(CofferError) -> Item? {
        let target = try vaultName(name)
        let found = try await run { (vault) throws(CofferError) -> Item? in
            do throws(CofferError) { return try vault.item(named: target) } catch  where error.kind == .itemNotFound { return nil }
        }
        return found.flatMap { scoped($0) }
    }

    /// The items whose name matches `pattern`, sorted by name, without
    /// decrypting any field value. `pattern` is a shell wildcard pattern
    /// (`*` any characters, `/` included; `?` one character; `[…]` a
    /// set), matched against the whole name without regard to case; a
    /// pattern without wildcards matches names that contain it. Nil or
    /// empty: every item.
    public func items(matching pattern: String? = nil) async throws(CofferError) -> [ItemSummary] {
        let all = try await run { (vault) throws(CofferError) -> [ItemSummary] in try vault.list() }.compactMap { scoped($0) }
        guard let pattern, !pattern.isEmpty else { return all }
        return all.filter { Coffer.matches($0.name, pattern) }
    }

    static func matches(_ name: String, _ pattern: String) -> Bool {
        if pattern.contains(where: { "*?[".contains($0) }) {
            return fnmatch(pattern.lowercased(), name.lowercased(), 0) == 0
        }
        return name.range(of: pattern, options: [.caseInsensitive]) != nil
    }

    // MARK: Credentials by source

    /// Every item that holds a credential of `type` for the source
    /// `sourceID` (an id such as `openai`, set with `source:`), best first.
    /// The first is the one ``string(forSource:type:)``,
    /// ``CredentialManager`` and `coffer check` use; the order is
    /// documented at ``Vault/candidates(forSource:type:today:)`` and is the
    /// same on every replica.
    public func candidates(for sourceID: String, type: CredentialType = .apiKey) async throws(CofferError) -> [Item] {
        try await run { (vault) throws(CofferError) -> [Item] in try vault.candidates(forSource: sourceID, type: type) }.compactMap { scoped($0) }
    }

    /// The credential of `type` for the source `sourceID`: the API key
    /// (also for `.apiKeyWithEmail`), the email, the password, or a custom
    /// item's primary field, from the first of ``candidates(for:type:)``.
    /// Expired values are returned too; ask ``candidates(for:type:)`` for
    /// the item's expiry.
    public func string(forSource sourceID: String, type: CredentialType = .apiKey) async throws(CofferError) -> String? {
        guard let best = try await candidates(for: sourceID, type: type).first else { return nil }
        if let field = CredentialRequirements.lookupField(type) { return best.field(field)?.value }
        return best.primaryField?.value
    }

    // MARK: Bundles and sync

    /// Writes a bundle of everything that may sync (or, with `since`, only
    /// what a replica with that summary has not seen) to `path`, atomically.
    @discardableResult
    public func export(to path: String, since: VersionVector? = nil) async throws(CofferError) -> ExportReport {
        try await run { (vault) throws(CofferError) -> ExportReport in try vault.exportBundle(to: path, since: since) }
    }

    /// Merges the bundle at `path` into the vault in one transaction
    /// (nothing changes when it is damaged, tampered with or foreign).
    @discardableResult
    public func importBundle(at path: String) async throws(CofferError) -> ImportReport {
        try await write { (vault) throws(CofferError) -> ImportReport in try vault.importBundle(at: path) }
    }

    /// Merges every other replica's bundle found in `directory`, then
    /// writes this replica's own bundle there (see `coffer sync`).
    @discardableResult
    public func sync(with directory: String) async throws(CofferError) -> SyncReport {
        try await write { (vault) throws(CofferError) -> SyncReport in try vault.sync(dir: directory) }
    }
}

extension CredentialType {
    /// The credential type an item of `type` provides, if any.
    init?(itemType: ItemType) {
        switch itemType {
        case .apiKey: self = .apiKey
        case .email: self = .email
        case .apiKeyWithEmail: self = .apiKeyWithEmail
        case .login: self = .login
        case .note, .custom, .sshKey: return nil
        }
    }
}
