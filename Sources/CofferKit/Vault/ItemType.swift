/// The kind of credential an item holds. Each type names its fields and
/// which of them is the primary secret that `coffer get NAME` prints.
public enum ItemType: String, Sendable, CaseIterable, Codable {
    case apiKey = "api-key"
    case email
    case apiKeyWithEmail = "api-key-with-email"
    case login
    case note
    case custom
    /// An SSH key pair (docs/ssh.md): the OpenSSH private key, its
    /// public key in `authorized_keys` form and its comment; served by
    /// the SSH agent.
    case sshKey = "ssh-key"

    /// A field a type declares.
    public struct FieldSpec: Sendable, Equatable {
        public let name: String
        public let isSecret: Bool
    }

    /// The fields this type declares, in display order.
    public var fields: [FieldSpec] {
        switch self {
        case .apiKey: return [.init(name: "key", isSecret: true)]
        case .email: return [.init(name: "email", isSecret: false)]
        case .apiKeyWithEmail: return [.init(name: "key", isSecret: true), .init(name: "email", isSecret: false)]
        case .login:
            return [
                .init(name: "username", isSecret: false), .init(name: "password", isSecret: true),
                .init(name: "url", isSecret: false),
            ]
        case .note: return [.init(name: "notes", isSecret: true)]
        case .custom: return []
        case .sshKey:
            return [
                .init(name: "private-key", isSecret: true), .init(name: "public-key", isSecret: false),
                .init(name: "comment", isSecret: false),
            ]
        }
    }

    /// The field printed by default; nil for `custom` (see
    /// ``Item/primaryField``).
    public var primaryFieldName: String? {
        switch self {
        case .apiKey, .apiKeyWithEmail: return "key"
        case .email: return "email"
        case .login: return "password"
        case .note: return "notes"
        case .custom: return nil
        case .sshKey: return "private-key"
        }
    }

    /// Whether a field of this name is secret when the user did not say.
    /// Declared fields follow the type; other names are secret when they
    /// look like one (key, token, secret, password, …).
    public func defaultSecrecy(of field: String) -> Bool {
        if let spec = fields.first(where: { $0.name == field }) { return spec.isSecret }
        let lower = field.lowercased()
        return ["key", "token", "secret", "password", "passphrase", "pin", "otp", "totp", "credential", "private"]
            .contains { lower.contains($0) }
    }
}
