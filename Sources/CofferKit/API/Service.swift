import Foundation

// A service's folder, as a Keychain service keeps one app's items apart.
extension Coffer {
    /// The folder that holds every service's folder: `apps/SERVICE/…`.
    public static let servicesFolder = "apps"

    /// Opens and unlocks the vault as ``open(_:at:)`` does, for the app
    /// `service` (a reverse-DNS name such as `com.example.app`, as a
    /// Keychain service): every name given to the returned `Coffer` —
    /// ``set(_:for:kind:source:expires:policy:)``, ``set(_:for:url:source:expires:policy:)``,
    /// ``string(for:field:)``, ``item(named:)``, ``credential(for:)``,
    /// ``remove(_:)``, ``items(matching:)`` — is relative to the folder
    /// `apps/SERVICE/`, and the names it returns are too:
    ///
    /// ```swift
    /// let coffer = try await Coffer.open(service: "com.example.app")
    /// try await coffer.set("sk-…", for: "api", url: "https://api.example.com")  // apps/com.example.app/api
    /// let all = try await coffer.items()                                          // [ItemSummary] named "api", …
    /// ```
    ///
    /// It sees nothing outside that folder: lookups by source id
    /// (``candidates(for:type:)``, ``string(forSource:type:)``) and the
    /// ``changes`` sequence are limited to it too, and an `id:HEX` name
    /// finds only an item of the folder. The items stay ordinary vault
    /// items (`apps/com.example.app/api` to the command line, to sync and
    /// to bundles); a folder keeps apps apart, it is no access control:
    /// any program that unlocks the vault can read every folder.
    /// ``vault``, bundles and ``sync(with:)`` still act on the whole vault.
    /// - Throws: ``CofferError/Kind/usage`` for a service that is empty or
    ///   contains `/` or control characters, and what ``open(_:at:)`` throws.
    public static func open(service: String, _ unlock: Unlock = .automatic, at path: String? = nil) async throws(CofferError) -> Coffer {
        let scope = try serviceScope(service)
        return try await open(unlock, at: path).serviceView(scope)
    }

    /// This `Coffer`'s vault seen as the app `service` sees it (see
    /// ``open(service:_:at:)``): for a vault opened another way (with a
    /// passphrase, ``create(at:passphrase:kdf:)``). The two share the
    /// unlocked vault, its I/O queue and its lock (``lock()`` on either
    /// locks both). On a `Coffer` that already has a service, the new
    /// service replaces it (services do not nest).
    public func scoped(toService service: String) throws(CofferError) -> Coffer {
        serviceView(try Coffer.serviceScope(service))
    }

    func serviceView(_ scope: (service: String, prefix: String)) -> Coffer {
        Coffer(vault: vault, session: session, service: scope.service, prefix: scope.prefix, sharing: self)
    }

    /// The service in Unicode NFC and its folder `apps/SERVICE/`, checked.
    static func serviceScope(_ raw: String) throws(CofferError) -> (service: String, prefix: String) {
        let service = raw.precomposedStringWithCanonicalMapping
        guard !service.isEmpty, !service.contains("/"), service != ".", service != "..",
            !service.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw CofferError(
                .usage, "invalid service name '\(service)': a service is one folder name without '/' or control characters",
                hint: "use the app's reverse-DNS name, such as com.example.app")
        }
        _ = try Vault.normalizeName(servicesFolder + "/" + service)
        return (service, servicesFolder + "/" + service + "/")
    }

    // MARK: Names

    /// The vault's name for `name` given to this `Coffer`: the name itself
    /// without a service; else `apps/SERVICE/` and the name, normalized.
    /// An `id:HEX` address is passed on as it is (the item found is
    /// checked with ``isInScope(_:)``).
    func vaultName(_ name: String) throws(CofferError) -> String {
        guard !prefix.isEmpty, !name.hasPrefix("id:") else { return name }
        return try Vault.normalizeName(prefix + Vault.normalizeName(name))
    }

    /// Whether the vault name `name` is this `Coffer`'s to see.
    func isInScope(_ name: String) -> Bool { prefix.isEmpty || name.hasPrefix(prefix) }

    /// `name` relative to the folder `prefix`; nil when it is outside.
    static func relativeName(_ name: String, prefix: String) -> String? {
        guard !prefix.isEmpty else { return name }
        guard name.hasPrefix(prefix) else { return nil }
        return String(name.dropFirst(prefix.count))
    }

    /// `item` as this `Coffer` shows it (named relative to its service's
    /// folder); nil when it is outside the folder.
    func scoped(_ item: Item) -> Item? {
        guard let relative = Coffer.relativeName(item.name, prefix: prefix) else { return nil }
        var item = item
        item.name = relative
        return item
    }

    func scoped(_ summary: ItemSummary) -> ItemSummary? {
        guard let relative = Coffer.relativeName(summary.name, prefix: prefix) else { return nil }
        var summary = summary
        summary.name = relative
        return summary
    }
}
