import Foundation

// The API key plus server URL an app talking to its own server keeps
// (the seeds' settings screen: an API key and the server it is for).
extension Coffer {
    /// Stores the API key `value` and the URL of the server it is for as
    /// one `api-key` item `name`: the key in its secret `key` field, the
    /// URL in its `url` field (not secret: `coffer ls` shows it). The
    /// two are written in one write, so a reader never sees the new key
    /// with the old URL. Read both back with ``credential(for:)``.
    ///
    /// As ``set(_:for:kind:source:expires:policy:)`` with `.apiKey`
    /// otherwise: an existing item takes the type `api-key` and keeps its
    /// other fields; the key is checked the same way and the same
    /// warnings come back.
    /// - Throws: ``CofferError/Kind/usage`` for an empty key or a URL that
    ///   is not `http://` or `https://` with a host (the message does not
    ///   repeat it: a URL may carry a password), and what `set` throws.
    @discardableResult
    public func set(
        _ value: String, for name: String, url: String, source: String? = nil, expires: Day? = nil, policy: SyncPolicy? = nil
    ) async throws(CofferError) -> [CredentialWarning] {
        guard Coffer.isServerURL(url) else {
            throw CofferError(
                .usage, "the URL given for '\(name)' is not an http or https URL with a host",
                hint: "give the server's base URL, such as https://api.example.com")
        }
        let fields = [Field(name: "key", value: value, isSecret: true), Field(name: "url", value: url, isSecret: false)]
        return try await store(value, for: name, type: .apiKey, fields: fields, source: source, expires: expires, policy: policy)
    }

    /// The value and URL of the item `name`: what
    /// ``set(_:for:url:source:expires:policy:)`` stored (the API key and
    /// its server's URL), or for any other item its primary value
    /// (``Item/primaryField``) and its `url` field when it has one (a
    /// login's). Nil when there is no such item or it has no value.
    ///
    /// ```swift
    /// if let (key, url) = try await coffer.credential(for: "api") { client.configure(baseURL: url, apiKey: key) }
    /// ```
    public func credential(for name: String) async throws(CofferError) -> (value: String, url: String?)? {
        guard let item = try await item(named: name), let value = item.primaryField?.value else { return nil }
        return (value, item.field("url")?.value)
    }

    /// Whether `text` is an `http` or `https` URL with a host.
    static func isServerURL(_ text: String) -> Bool {
        guard !text.contains(where: { $0.isWhitespace }), let parts = URLComponents(string: text),
            let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = parts.host, !host.isEmpty
        else { return false }
        return true
    }
}
