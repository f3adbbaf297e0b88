/// Something about a credential that did not stop it from being stored
/// but that the application (or its user) should know: a likely paste
/// mistake, a value that does not look like its provider's keys, a type
/// that does not match the source's requirement, several items for one
/// source. ``message`` is one line for people and never contains the value.
public struct CredentialWarning: Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem, for code that reacts to it. New kinds may be added.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The value starts or ends with whitespace.
        case surroundingWhitespace
        /// The value is wrapped in quotes, which would be stored with it.
        case quoted
        /// The value starts with `Bearer `.
        case bearerPrefix
        /// The value looks like `NAME=VALUE` pasted whole.
        case assignment
        /// The value contains whitespace or a line break.
        case innerWhitespace
        /// The value is the provider's key of another kind (a publishable
        /// key where a secret key is expected).
        case wrongKeyKind
        /// The value looks like another provider's key than the source's.
        case otherProvider
        /// The value lacks the prefix the source's provider's keys have.
        case missingPrefix
        /// The value is shorter than the provider's keys.
        case truncated
        /// The value is longer than the provider's keys (two pasted together?).
        case tooLong
        /// The source's requirement asks for another credential type.
        case typeMismatch
        /// An email field does not look like an address.
        case emailFormat
        /// Several items hold a credential for the same source; lookups by
        /// source pick one of them (see ``Coffer/candidates(for:type:)``).
        case ambiguousSource
        /// The item's expiry date has passed.
        case expired
        /// Any other finding.
        case other
    }

    public var kind: Kind
    /// The field the warning is about (`key`, `email`, …), when it is about one.
    public var field: String?
    /// One line for people, never containing a secret.
    public var message: String

    public init(_ kind: Kind, field: String? = nil, _ message: String) {
        self.kind = kind
        self.field = field
        self.message = message
    }

    public var description: String { message }
}
