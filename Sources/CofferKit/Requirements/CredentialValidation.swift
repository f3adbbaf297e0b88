import Foundation

/// The outcome of checking a credential's values before they are stored:
/// errors (the source's manifest rule fails: refuse unless forced) and
/// warnings (likely paste mistakes from the built-in catalogue). No
/// message contains a value.
public struct CredentialCheck: Sendable, Equatable {
    /// Rule failures, each "FIELD PROBLEM", e.g. "key does not start with 'sk-'".
    public var errors: [String] = []
    /// Likely mistakes that do not stop the write, typed.
    public var typedWarnings: [CredentialWarning] = []
    /// ``typedWarnings``' messages.
    public var warnings: [String] { typedWarnings.map(\.message) }
    /// The requirement the values were checked against, if one was found.
    public var requirement: SourceRequirement?

    /// An empty result.
    public init(errors: [String] = [], warnings: [String] = [], requirement: SourceRequirement? = nil) {
        self.errors = errors
        self.typedWarnings = warnings.map { CredentialWarning(.other, $0) }
        self.requirement = requirement
    }

    /// True when no rule failed.
    public var passes: Bool { errors.isEmpty }

    /// The error to refuse the write with (exit 65): the first failure
    /// and how many more, and that `--force` stores it anyway.
    public var refusal: CofferError {
        let who = requirement.map { "the format rule of source '\($0.id)'" } ?? "its source's format rule"
        var msg = "the value fails \(who): \(errors.first ?? "")"
        if errors.count > 1 { msg += " (and \(errors.count - 1) more: \(errors.dropFirst().joined(separator: "; ")))" }
        return CofferError(.invalidCredential, msg, remedy: .init(.checkValueOrForce, "check what you pasted; to store it anyway, skip the format check"))
    }
}

/// Checks credential values against a source's requirement and the
/// built-in catalogue of well-known key formats.
public enum CredentialValidation {
    /// Checks `fields` (the values being written) of an item of `type`
    /// whose source is `source`. `requirement` is the source's manifest
    /// entry, if any: its rules give errors. The catalogue gives warnings
    /// for the `key` field (or, without one, the secret fields of an API-key
    /// item) even without a requirement.
    public static func check(fields: [Field], type: ItemType, source: String?, requirement: SourceRequirement?) -> CredentialCheck {
        var result = CredentialCheck(requirement: requirement)
        if let r = requirement {
            if r.type != .custom && r.type.itemType != type && !(r.type == .apiKey && type == .apiKeyWithEmail)
                && !(r.type == .email && type == .apiKeyWithEmail)
            {
                result.typedWarnings.append(
                    CredentialWarning(
                        .typeMismatch,
                        "source '\(r.id)' needs \(Article.a(r.type.rawValue)) \(r.type.rawValue) credential; this item is of type \(type.rawValue)"))
            }
            for f in fields {
                for p in r.problems(field: f.name, value: f.value) { result.errors.append("\(f.name) \(p)") }
            }
        } else {
            for f in fields where f.name == "email" && (type == .email || type == .apiKeyWithEmail) {
                for p in EmailRule.problems(in: f.value) { result.typedWarnings.append(CredentialWarning(.emailFormat, field: f.name, "\(f.name) \(p)")) }
            }
        }
        // Key-format warnings are for keys: the `key` field, or the secret
        // fields of an API-key item. A note or a password may well hold
        // spaces and line breaks.
        let holdsKeys = type == .apiKey || type == .apiKeyWithEmail
        let keyFields =
            fields.contains { $0.name == "key" }
            ? fields.filter { $0.name == "key" } : holdsKeys ? fields.filter(\.isSecret) : []
        for f in keyFields {
            result.typedWarnings += KeyCatalogue.diagnose(f.value, field: f.name, source: source)
        }
        return result
    }
}

/// "a" or "an" before a word, for messages.
enum Article {
    static func a(_ word: String) -> String {
        guard let c = word.lowercased().first else { return "a" }
        return "aeiou".contains(c) ? "an" : "a"
    }
}
