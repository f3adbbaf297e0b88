import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// One collection of the desktop's Secret Service (docs/secret-service.md):
/// a folder of the vault. The default collection is the folder
/// ``Vault/secretServiceDefaultFolder``; others are registered by
/// ``Vault/createSecretServiceCollection(label:)``.
public struct SecretServiceCollection: Sendable, Equatable {
    /// The last element of the collection's D-Bus object path:
    /// `[A-Za-z0-9_]+`, `default` for the default collection.
    public var id: String
    /// The vault folder its items are in (no trailing '/').
    public var folder: String
    public var label: String
    public var created: Date

    public init(id: String, folder: String, label: String, created: Date) {
        self.id = id
        self.folder = folder
        self.label = label
        self.created = created
    }

    /// Whether `name` is an item of this collection: directly in its
    /// folder, not in a subfolder.
    public func contains(_ name: String) -> Bool {
        guard name.hasPrefix(folder + "/") else { return false }
        return !name.dropFirst(folder.count + 1).contains("/")
    }
}

/// One item of a Secret Service collection, without its secret: a vault
/// item whose fields ``Vault/secretServiceLabelField``,
/// ``Vault/secretServiceAttributesField`` and
/// ``Vault/secretServiceContentTypeField`` hold what an application gave.
/// Any item of the folder is one (an item added by hand has its name as
/// label and no attributes).
public struct SecretServiceItem: Sendable, Equatable {
    public var id: ItemID
    public var name: String
    public var label: String
    public var attributes: [String: String]
    public var contentType: String
    public var created: Date
    public var modified: Date

    /// Whether every pair of `query` is among the item's attributes.
    public func matches(_ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }
}

/// A secret as the Secret Service hands it over: bytes and a content
/// type (`text/plain; charset=utf8` for text).
public struct SecretServiceSecret: Sendable {
    public var bytes: [UInt8]
    public var contentType: String

    public init(bytes: [UInt8], contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
    }
}

/// The Secret Service's storage in the vault: items of a collection's
/// folder, their label, attributes and content type as fields, and the
/// registry of created collections and aliases (a reserved item). The
/// façade's forwarders are in SecretService/Vault+SecretService.swift.
package struct SecretServiceStorage: VaultComponent {
    package let core: VaultCore
}

extension SecretServiceStorage {
    static let registryName = Vault.reservedNamePrefix + "secret-service"
    static let collectionsField = "collections"
    static let aliasesField = "aliases"

    struct Registry: Codable, Equatable {
        struct Entry: Codable, Equatable {
            var id: String
            var folder: String
            var label: String
            var created: Int64
        }
        var collections: [Entry] = []
        var aliases: [String: String] = [:]
    }

    func registry() throws(CofferError) -> Registry {
        let item: Item
        do {
            item = try items.item(named: Self.registryName)
        } catch  where error.kind == .itemNotFound {
            return Registry()
        }
        var r = Registry()
        if let f = item.field(Self.collectionsField) {
            guard let entries = try? JSONDecoder().decode([Registry.Entry].self, from: Data(f.bytes)) else {
                throw CofferError(.badData, "the Secret Service registry (\(Self.registryName)) holds collections that are not valid JSON")
            }
            r.collections = entries
        }
        if let f = item.field(Self.aliasesField) {
            guard let aliases = try? JSONDecoder().decode([String: String].self, from: Data(f.bytes)) else {
                throw CofferError(.badData, "the Secret Service registry (\(Self.registryName)) holds aliases that are not valid JSON")
            }
            r.aliases = aliases
        }
        return r
    }

    func save(_ r: Registry) throws(CofferError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let fields = [
            Field(name: Self.collectionsField, bytes: Array((try? encoder.encode(r.collections)) ?? Data("[]".utf8)), isSecret: false, isFile: false),
            Field(name: Self.aliasesField, bytes: Array((try? encoder.encode(r.aliases)) ?? Data("{}".utf8)), isSecret: false, isFile: false),
        ]
        if try items.contains(Self.registryName) {
            var e = ItemEdit()
            e.setFields = fields
            _ = try items.edit(Self.registryName, e)
        } else {
            _ = try items.add([ItemDraft(name: Self.registryName, type: .custom, fields: fields, tags: ["secret-service"])], allowReserved: true)
        }
    }

    /// Changes when another connection (another process) commits to the
    /// vault file; this vault's own writes leave it as it is.
    package func changeStamp() throws(CofferError) -> Int {
        try CofferError.wrap { try store.read { db in try Queries.dataVersion(db) } }
    }

    package func collections() throws(CofferError) -> [SecretServiceCollection] {
        let r = try registry()
        var out = [SecretServiceCollection(id: "default", folder: Vault.secretServiceDefaultFolder, label: "Coffer", created: Date(timeIntervalSince1970: 0))]
        for e in r.collections where !out.contains(where: { $0.id == e.id || $0.folder == e.folder }) {
            out.append(SecretServiceCollection(id: e.id, folder: e.folder, label: e.label, created: Date(timeIntervalSince1970: Double(e.created) / 1000)))
        }
        return out
    }

    package func aliases() throws(CofferError) -> [String: String] {
        var a = ["default": "default", "login": "default"]
        for (k, v) in try registry().aliases { a[k] = v }
        return a
    }

    package func setAlias(_ alias: String, to collectionID: String?) throws(CofferError) {
        var r = try registry()
        r.aliases[alias] = collectionID ?? ""
        try save(r)
    }

    package func createCollection(label: String) throws(CofferError) -> SecretServiceCollection {
        var r = try registry()
        let existing = try collections()
        let base = Vault.secretServiceSlug(label, separator: "_")
        var id = base
        var n = 2
        while id == "default" || existing.contains(where: { $0.id == id }) {
            id = "\(base)_\(n)"
            n += 1
        }
        let folder = Vault.secretServiceDefaultFolder + "/" + id.replacingOccurrences(of: "_", with: "-")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        r.collections.append(Registry.Entry(id: id, folder: folder, label: label, created: now))
        try save(r)
        return SecretServiceCollection(id: id, folder: folder, label: label, created: Date(timeIntervalSince1970: Double(now) / 1000))
    }

    package func relabelCollection(_ id: String, label: String) throws(CofferError) {
        var r = try registry()
        guard let i = r.collections.firstIndex(where: { $0.id == id }) else {
            throw CofferError(.usage, "the default collection's label is fixed")
        }
        r.collections[i].label = label
        try save(r)
    }

    /// Removes a created collection from the registry; its items are
    /// deleted by the caller first. The default collection stays.
    package func removeCollection(_ id: String) throws(CofferError) {
        var r = try registry()
        guard let i = r.collections.firstIndex(where: { $0.id == id }) else {
            throw CofferError(.usage, "the default collection cannot be deleted")
        }
        r.collections.remove(at: i)
        for (k, v) in r.aliases where v == id { r.aliases[k] = "" }
        try save(r)
    }

    package func entry(_ item: Item) -> SecretServiceItem {
        let label = item.field(Vault.secretServiceLabelField)?.value ?? String(item.name.split(separator: "/").last ?? Substring(item.name))
        var attributes: [String: String] = [:]
        if let f = item.field(Vault.secretServiceAttributesField),
            let decoded = try? JSONDecoder().decode([String: String].self, from: Data(f.bytes))
        {
            attributes = decoded
        }
        let contentType = item.field(Vault.secretServiceContentTypeField)?.value ?? "text/plain"
        return SecretServiceItem(
            id: item.id, name: item.name, label: label, attributes: attributes, contentType: contentType, created: item.createdAt,
            modified: item.updatedAt)
    }

    package func secret(of item: Item) -> SecretServiceSecret {
        let f = item.field(Vault.secretServiceSecretField) ?? item.primaryField
        let type = item.field(Vault.secretServiceContentTypeField)?.value ?? "text/plain"
        return SecretServiceSecret(bytes: f?.bytes ?? [], contentType: type)
    }

    static func attributesText(_ attributes: [String: String]) throws(CofferError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(attributes) else { throw CofferError(.badData, "the attributes cannot be encoded") }
        return Array(data)
    }

    static func checkSecret(_ secret: SecretServiceSecret) throws(CofferError) {
        guard secret.bytes.count <= Vault.secretServiceMaximumSecret else {
            throw CofferError(
                .badData, "the secret is larger than \(Vault.secretServiceMaximumSecret / 1024) KiB",
                hint: "the Secret Service keeps passwords and tokens; keep files as attachments")
        }
        guard secret.contentType.utf8.count <= 256 else { throw CofferError(.badData, "the content type is longer than 256 bytes") }
    }

    static func checkAttributes(_ attributes: [String: String], label: String) throws(CofferError) {
        guard attributes.count <= 256 else { throw CofferError(.badData, "more than 256 attributes") }
        for (k, v) in attributes {
            guard !k.isEmpty, k.utf8.count <= 1024, v.utf8.count <= 64 * 1024 else {
                throw CofferError(.badData, "an attribute name is empty or longer than 1 KiB, or its value is longer than 64 KiB")
            }
            guard !k.utf8.contains(0), !v.utf8.contains(0) else { throw CofferError(.badData, "an attribute contains a NUL byte") }
        }
        guard label.utf8.count <= 4096, !label.utf8.contains(0) else { throw CofferError(.badData, "the label is longer than 4 KiB or contains a NUL byte") }
    }

    static func secretField(_ secret: SecretServiceSecret) -> Field {
        let text = String(validating: secret.bytes, as: UTF8.self) != nil
        return Field(name: Vault.secretServiceSecretField, bytes: secret.bytes, isSecret: true, isFile: !text)
    }

    package func createItem(
        in collection: SecretServiceCollection, label: String, attributes: [String: String], secret: SecretServiceSecret
    ) throws(CofferError) -> Item {
        try Self.checkAttributes(attributes, label: label)
        try Self.checkSecret(secret)
        let fields = [
            Self.secretField(secret),
            Field(name: Vault.secretServiceLabelField, value: label, isSecret: false),
            Field(name: Vault.secretServiceAttributesField, bytes: try Self.attributesText(attributes), isSecret: false, isFile: false),
            Field(name: Vault.secretServiceContentTypeField, value: secret.contentType, isSecret: false),
        ]
        let slug = Vault.secretServiceSlug(label, separator: "-")
        var lastError: CofferError?
        for _ in 0..<4 {
            let name = collection.folder + "/" + slug + "-" + Hex.encode(Random.bytes(4))
            do {
                return try items.add([ItemDraft(name: name, type: .custom, fields: fields, tags: ["secret-service"])], allowReserved: false)[0]
            } catch  where error.kind == .duplicateName {
                lastError = error
            }
        }
        throw lastError ?? CofferError(.duplicateName, "cannot name the new item")
    }

    package func update(
        _ item: Item, label: String? = nil, attributes: [String: String]? = nil, secret: SecretServiceSecret? = nil
    ) throws(CofferError) -> Item {
        var e = ItemEdit()
        if let label {
            try Self.checkAttributes([:], label: label)
            e.setFields.append(Field(name: Vault.secretServiceLabelField, value: label, isSecret: false))
        }
        if let attributes {
            try Self.checkAttributes(attributes, label: "")
            e.setFields.append(Field(name: Vault.secretServiceAttributesField, bytes: try Self.attributesText(attributes), isSecret: false, isFile: false))
        }
        if let secret {
            try Self.checkSecret(secret)
            var field = Self.secretField(secret)
            // An item added by hand keeps its secret in its primary field.
            if item.field(Vault.secretServiceSecretField) == nil, let primary = item.primaryField { field.name = primary.name }
            e.setFields.append(field)
            e.setFields.append(Field(name: Vault.secretServiceContentTypeField, value: secret.contentType, isSecret: false))
        }
        guard !e.isEmpty else { return item }
        return try items.edit("id:" + item.id.hex, e)
    }
}
