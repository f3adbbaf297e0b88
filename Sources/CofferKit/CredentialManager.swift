import CofferCrypto
import CofferSystem
import Foundation

/// The credential store an application uses instead of the Keychain: API
/// keys and emails per source id, kept in an unlocked Coffer vault.
///
/// ```swift
/// let manager = try CredentialManager.open(passphrase: .environment("COFFER_PASSPHRASE"))
/// try await manager.store(apiKey: key, for: "ads")
/// let key = try await manager.retrieve(for: "ads", type: .apiKey)
/// ```
///
/// Credentials are ordinary vault items: `store(apiKey:for:)` writes an
/// `api-key` item whose source is the source id (named
/// `PREFIX<source>/api-key` when it creates one), so `coffer ls`,
/// `coffer get`, `coffer check` and sync all see them. Lookups follow the
/// rules of ``Vault/status(of:today:)``.
///
/// Thread-safe: an actor; writes are serialized, reads run off the actor
/// and concurrent reads of the same credential share one vault lookup.
/// See docs/cofferkit.md.
public actor CredentialManager {
    /// The unlocked vault the credentials live in.
    public nonisolated let vault: Vault
    /// Prepended to the names of items this manager creates (e.g. `apps/myapp/`).
    public nonisolated let namePrefix: String

    /// Number of vault lookups `retrieve` has performed; concurrent reads
    /// of the same credential that were coalesced count once.
    public private(set) var vaultReads = 0

    private struct ReadKey: Hashable {
        var source: String
        var type: CredentialType
    }
    private var inFlight: [ReadKey: (token: UInt64, task: Task<StoredCredential?, any Error>)] = [:]
    private var nextToken: UInt64 = 0

    /// Wraps any unlocked vault (opened with a passphrase, or with a
    /// master key from a shell session).
    public init(vault: Vault, namePrefix: String = "") {
        self.vault = vault
        self.namePrefix = namePrefix
    }

    /// Uses the vault of `coffer` (opened with ``Coffer/open(_:at:)``,
    /// which runs Argon2id off the cooperative pool).
    public init(coffer: Coffer, namePrefix: String = "") {
        self.init(vault: coffer.vault, namePrefix: namePrefix)
    }

    // MARK: Opening

    /// Where a passphrase comes from.
    public enum PassphraseInput: Sendable {
        /// An environment variable (the least safe: other processes of the
        /// user may read it).
        case environment(String)
        /// An open file descriptor, read to its end.
        case fileDescriptor(Int32)
        /// A file: its whole content, less one trailing newline.
        case file(String)
        /// The terminal, without echo, after printing the prompt.
        case terminal(prompt: String)
    }

    /// Opens and unlocks the vault at `path` (default: `$COFFER_VAULT`,
    /// else the XDG data folder) with `passphrase`.
    @available(*, deprecated, message: "runs Argon2id on the calling thread; use `CredentialManager(coffer: try await Coffer.open(...))`")
    public static func open(path: String? = nil, passphrase: SecretBytes, namePrefix: String = "") throws(CofferError) -> CredentialManager {
        let file = try VaultFile.open(path: VaultLocation.resolve(explicit: path))
        return CredentialManager(vault: try file.unlock(passphrase: passphrase), namePrefix: namePrefix)
    }

    /// Opens the vault at `path`, reading its passphrase from `input`.
    @available(*, deprecated, message: "runs Argon2id on the calling thread; use `CredentialManager(coffer: try await Coffer.open(...))`")
    public static func open(path: String? = nil, passphrase input: PassphraseInput, namePrefix: String = "") throws(CofferError) -> CredentialManager {
        let secret: SecretBytes
        switch input {
        case .environment(let name):
            guard let v = SecretInput.environment(name) else {
                throw CofferError(.locked, "no passphrase: $\(name) is not set", hint: "set it, or use another PassphraseInput")
            }
            secret = v
        case .fileDescriptor(let fd): secret = try CofferError.reading { () throws(SecretInputError) in try SecretInput.read(fd: fd) }
        case .file(let path): secret = try CofferError.reading { () throws(SecretInputError) in try SecretInput.read(path: path) }
        case .terminal(let prompt): secret = try CofferError.reading { () throws(SecretInputError) in try SecretInput.prompt(prompt) }
        }
        let file = try VaultFile.open(path: VaultLocation.resolve(explicit: path))
        return CredentialManager(vault: try file.unlock(passphrase: secret), namePrefix: namePrefix)
    }

    /// Opens the vault at `path` with a master key obtained elsewhere
    /// (e.g. a shell session); the caller vouches that it is this vault's.
    public static func open(path: String? = nil, masterKey: SecretBytes, namePrefix: String = "") throws(CofferError) -> CredentialManager {
        let file = try VaultFile.open(path: VaultLocation.resolve(explicit: path))
        return CredentialManager(vault: try file.unlock(masterKey: masterKey), namePrefix: namePrefix)
    }

    // MARK: Storing

    /// Stores (or replaces) the API key for `sourceID`, after checking it
    /// against the source's rule in `manifest` or in the vault's
    /// registered manifests. Returns catalogue warnings (likely paste
    /// mistakes, several items for the source), which do not stop the write.
    /// - Throws: ``CofferError/Kind/invalidCredential`` when the key fails
    ///   its rule; vault errors.
    @discardableResult
    public func store(apiKey: String, for sourceID: String, manifest: RequirementsManifest? = nil) throws(CofferError) -> [CredentialWarning] {
        try put(type: .apiKey, fields: [Field(name: "key", value: apiKey, isSecret: true)], source: sourceID, manifest: manifest)
    }

    /// Stores (or replaces) the email used as an identifier for `sourceID`.
    /// - Throws: ``CofferError/Kind/invalidCredential`` when it is not an
    ///   email address or fails its rule; vault errors.
    @discardableResult
    public func store(email: String, for sourceID: String, manifest: RequirementsManifest? = nil) throws(CofferError) -> [CredentialWarning] {
        try put(type: .email, fields: [Field(name: "email", value: email, isSecret: false)], source: sourceID, manifest: manifest)
    }

    /// Stores (or replaces) an API key and an email together, as one
    /// `api-key-with-email` item.
    @discardableResult
    public func store(apiKey: String, email: String, for sourceID: String, manifest: RequirementsManifest? = nil) throws(CofferError) -> [CredentialWarning] {
        try put(
            type: .apiKeyWithEmail,
            fields: [Field(name: "key", value: apiKey, isSecret: true), Field(name: "email", value: email, isSecret: false)],
            source: sourceID, manifest: manifest)
    }

    private func put(type: CredentialType, fields: [Field], source: String, manifest: RequirementsManifest?) throws(CofferError) -> [CredentialWarning] {
        guard !source.isEmpty else { throw CofferError(.usage, "a source id cannot be empty") }
        for f in fields where f.value.isEmpty {
            throw CofferError(.usage, "the \(f.name) for source '\(source)' is empty")
        }
        let check = try vault.validate(fields: fields, type: type.itemType, source: source, manifest: manifest)
        if !check.passes { throw check.refusal }
        var warnings = check.typedWarnings
        if check.requirement == nil, type != .apiKey {
            // Without a rule the email check only warns in the CLI; an
            // application storing an identifier wants it refused.
            let emailProblems = fields.filter { $0.name == "email" }.flatMap { EmailRule.problems(in: $0.value) }
            if !emailProblems.isEmpty {
                throw CofferError(.invalidCredential, "the email for source '\(source)' \(emailProblems[0])")
            }
            warnings.removeAll { $0.kind == .emailFormat }
        }
        invalidate(source)
        // The item a retrieve of this type picks (see Vault.credentialItem),
        // so that the next retrieve returns what was stored.
        let existing = CredentialRequirements.credentialItem(
            try vault.requirements.items(forSource: source), type: type.itemType, holding: fields.map(\.name), today: .today)
        if let existing {
            var edit = ItemEdit()
            edit.setFields = fields
            try vault.edit("id:" + existing.id.hex, edit)
        } else {
            try vault.add(ItemDraft(name: "\(namePrefix)\(source)/\(type.rawValue)", type: type.itemType, fields: fields, source: source))
        }
        if let w = CredentialRequirements.ambiguityWarning(try vault.candidates(forSource: source, type: type), sourceID: source) {
            warnings.append(w)
        }
        return warnings
    }

    // MARK: Reading

    /// A stored credential value and where it came from.
    public struct StoredCredential: Sendable, Equatable {
        /// The value (API key, email, password…).
        public var value: String
        /// The item holding it.
        public var itemName: String
        /// The item's expiry date, if any.
        public var expires: Day?
        /// Whether the expiry has passed (the value is still returned, as
        /// a fallback the app may choose to use).
        public var isExpired: Bool
    }

    /// The credential of `type` stored for `sourceID`, or nil. For
    /// `api-key-with-email` the key is returned (ask for `.email` for the
    /// email); for `login` the password. Expired credentials are returned
    /// too; see ``StoredCredential/isExpired``.
    public func retrieveCredential(for sourceID: String, type: CredentialType) async throws(CofferError) -> StoredCredential? {
        let key = ReadKey(source: sourceID, type: type)
        let task: Task<StoredCredential?, any Error>
        if let running = inFlight[key] {
            task = running.task
        } else {
            vaultReads += 1
            nextToken += 1
            let token = nextToken
            let vault = self.vault
            task = Task.detached { try CredentialManager.lookup(vault: vault, source: sourceID, type: type) }
            inFlight[key] = (token, task)
            defer { if inFlight[key]?.token == token { inFlight[key] = nil } }
            return try await Self.value(of: task)
        }
        return try await Self.value(of: task)
    }

    private static func value(of task: Task<StoredCredential?, any Error>) async throws(CofferError) -> StoredCredential? {
        do { return try await task.value } catch let e as CofferError { throw e } catch {
            throw CofferError(.internalError, "\(error)")
        }
    }

    private static func lookup(vault: Vault, source: String, type: CredentialType) throws(CofferError) -> StoredCredential? {
        let today = Day.today
        let found: (item: Item, value: String)?
        switch type {
        case .apiKey: found = try vault.credential(forSource: source, field: "key", today: today)
        case .apiKeyWithEmail:
            // As status(of:) does: one item holding both first, else the
            // best key.
            if let both = CredentialRequirements.bothItem(try vault.requirements.items(forSource: source), today: today), let key = both.field("key") {
                found = (both, key.value)
            } else {
                found = try vault.credential(forSource: source, field: "key", today: today)
            }
        case .email: found = try vault.credential(forSource: source, field: "email", today: today)
        case .login: found = try vault.credential(forSource: source, field: "password", today: today)
        case .custom:
            let item = CredentialRequirements.preferred(try vault.requirements.items(forSource: source), today: today)
            found = item.flatMap { i in i.primaryField.map { (i, $0.value) } }
        }
        guard let (item, value) = found else { return nil }
        return StoredCredential(value: value, itemName: item.name, expires: item.expires, isExpired: item.isExpired(today: today))
    }

    /// The value of ``retrieveCredential(for:type:)``: the API key, email,
    /// … stored for `sourceID`, or nil when there is none.
    public func retrieve(for sourceID: String, type: CredentialType) async throws(CofferError) -> String? {
        try await retrieveCredential(for: sourceID, type: type)?.value
    }

    // MARK: Deleting

    /// Deletes every item of `type` stored for `sourceID` (deletes sync
    /// like any edit). Returns how many were deleted; none is not an error.
    @discardableResult
    public func delete(for sourceID: String, type: CredentialType) throws(CofferError) -> Int {
        invalidate(sourceID)
        let doomed = try vault.requirements.items(forSource: sourceID).filter { $0.type == type.itemType }
        for item in doomed { try vault.delete("id:" + item.id.hex) }
        return doomed.count
    }

    private func invalidate(_ source: String) {
        for k in inFlight.keys where k.source == source { inFlight[k] = nil }
    }

    // MARK: Requirements

    /// Whether `requirement`'s source is ready, missing, invalid or expired.
    public func status(of requirement: SourceRequirement) throws(CofferError) -> SourceStatus {
        try vault.status(of: requirement)
    }

    /// Whether the source has a stored credential that passes its rule and
    /// has not expired.
    public func hasValidCredentials(for requirement: SourceRequirement) throws(CofferError) -> Bool {
        try vault.status(of: requirement).isReady
    }

    /// The sources that can be used: ready ones, and optional ones (which
    /// work, perhaps degraded, without a credential).
    public func availableSources(in manifest: RequirementsManifest) throws(CofferError) -> [SourceRequirement] {
        try vault.check(manifest).filter { $0.isReady || !$0.requirement.isRequired }.map(\.requirement)
    }

    /// The required sources that are not ready: what the app should ask
    /// the user to set up (their ``SourceRequirement/registrationURL`` says
    /// where).
    public func unavailableSources(in manifest: RequirementsManifest) throws(CofferError) -> [SourceRequirement] {
        try vault.check(manifest).filter { !$0.isReady && $0.requirement.isRequired }.map(\.requirement)
    }
}
