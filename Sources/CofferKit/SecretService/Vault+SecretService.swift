import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's Secret Service operations: each is ``SecretServiceStorage``'s
// (docs/secret-service.md).
extension Vault {
    /// The folder of the default collection (and its `login` alias).
    public static let secretServiceDefaultFolder = "apps"
    /// The field holding an item's secret.
    public static let secretServiceSecretField = "secret"
    /// The field holding the label an application gave.
    public static let secretServiceLabelField = "label"
    /// The field holding the attributes, a JSON object of strings with
    /// sorted keys.
    public static let secretServiceAttributesField = "attributes"
    /// The field holding the secret's content type.
    public static let secretServiceContentTypeField = "content-type"
    /// The largest secret the Secret Service stores: 1 MiB.
    public static let secretServiceMaximumSecret = 1024 * 1024

    /// `text` as a name part: lower-case ASCII letters and digits, any
    /// other run of characters as one `separator`, at most 32 characters;
    /// `item` when nothing is left.
    public static func secretServiceSlug(_ text: String, separator: Character) -> String {
        var out = ""
        for c in text.lowercased().unicodeScalars {
            if c.isASCII, CharacterSet.alphanumerics.contains(c) {
                out.unicodeScalars.append(c)
            } else if !out.isEmpty, out.last != separator {
                out.append(separator)
            }
            if out.count >= 32 { break }
        }
        while out.last == separator { out.removeLast() }
        return out.isEmpty ? "item" : out
    }

    /// A number that changes when another process commits to the vault
    /// file (SQLite's `data_version`); this vault's own writes leave it.
    public func secretServiceChangeStamp() throws(CofferError) -> Int {
        try secretServiceStorage.changeStamp()
    }

    /// The collections: the default one, then those created by
    /// applications (kept in a reserved item, so they sync).
    public func secretServiceCollections() throws(CofferError) -> [SecretServiceCollection] {
        try secretServiceStorage.collections()
    }

    /// Alias → collection id (`default` and `login` name the default
    /// collection unless set otherwise; an empty id: no collection).
    public func secretServiceAliases() throws(CofferError) -> [String: String] {
        try secretServiceStorage.aliases()
    }

    /// Points `alias` at a collection (nil: at none).
    public func setSecretServiceAlias(_ alias: String, to collectionID: String?) throws(CofferError) {
        try secretServiceStorage.setAlias(alias, to: collectionID)
    }

    /// Registers a new collection, in a folder of its own under the
    /// default one.
    public func createSecretServiceCollection(label: String) throws(CofferError) -> SecretServiceCollection {
        try secretServiceStorage.createCollection(label: label)
    }

    /// Changes a created collection's label.
    public func relabelSecretServiceCollection(_ id: String, label: String) throws(CofferError) {
        try secretServiceStorage.relabelCollection(id, label: label)
    }

    /// Forgets a created collection (its items are deleted by the caller).
    public func removeSecretServiceCollection(_ id: String) throws(CofferError) {
        try secretServiceStorage.removeCollection(id)
    }

    /// What the Secret Service shows of `item`.
    public func secretServiceEntry(_ item: Item) -> SecretServiceItem {
        secretServiceStorage.entry(item)
    }

    /// The secret of `item` as the Secret Service hands it over.
    public func secretServiceSecret(_ item: Item) -> SecretServiceSecret {
        secretServiceStorage.secret(of: item)
    }

    /// Stores a new item in `collection`, named from its label and a
    /// random suffix (`apps/github-token-3f9a1c2e`). A normal write: it
    /// syncs.
    public func createSecretServiceItem(
        in collection: SecretServiceCollection, label: String, attributes: [String: String], secret: SecretServiceSecret
    ) throws(CofferError) -> Item {
        try secretServiceStorage.createItem(in: collection, label: label, attributes: attributes, secret: secret)
    }

    /// Changes what is given of `item` (nil: leave as it is), as one write.
    public func updateSecretServiceItem(
        _ item: Item, label: String? = nil, attributes: [String: String]? = nil, secret: SecretServiceSecret? = nil
    ) throws(CofferError) -> Item {
        try secretServiceStorage.update(item, label: label, attributes: attributes, secret: secret)
    }
}
