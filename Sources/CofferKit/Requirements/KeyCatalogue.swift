import Foundation

/// The documented shape of one provider's keys, used to warn about likely
/// paste mistakes. The catalogue only ever warns: providers change their
/// formats, and a manifest's rule is what refuses a value.
public struct KnownKeyFormat: Sendable, Equatable {
    /// One documented key prefix and the shortest (and, for fixed-length
    /// keys, longest) length of a whole key with it.
    public struct Variant: Sendable, Equatable {
        /// The prefix, e.g. `sk-proj-`.
        public var prefix: String
        /// What this kind of key is, e.g. "project key".
        public var kind: String
        /// Fewest characters of a whole key.
        public var minLength: Int
        /// Most characters, for fixed-length keys.
        public var maxLength: Int?
    }

    /// Provider name for messages, e.g. "OpenAI".
    public var provider: String
    /// Source ids that mean this provider (lower-case).
    public var sources: [String]
    /// Key prefixes, longest first.
    public var variants: [Variant]
    /// Prefixes of the provider's keys that do not belong in a secret-key
    /// field (e.g. Stripe publishable keys), with what they are.
    public var wrongKinds: [(prefix: String, kind: String)]
    /// Whether a value for one of `sources` must start with one of the
    /// prefixes (false when the source holds several kinds of values).
    public var prefixExpected: Bool
    /// Where the format is documented.
    public var reference: String

    /// Formats are equal when provider, sources and variants are.
    public static func == (a: KnownKeyFormat, b: KnownKeyFormat) -> Bool {
        a.provider == b.provider && a.sources == b.sources && a.variants == b.variants
    }
}

/// Built-in knowledge of well-known API key formats (docs/requirements.md
/// lists them with their references).
public enum KeyCatalogue {
    /// Every known format.
    public static let formats: [KnownKeyFormat] = [
        KnownKeyFormat(
            provider: "OpenAI", sources: ["openai"],
            variants: [
                .init(prefix: "sk-proj-", kind: "project key", minLength: 40),
                .init(prefix: "sk-svcacct-", kind: "service account key", minLength: 40),
                .init(prefix: "sk-admin-", kind: "admin key", minLength: 40),
                .init(prefix: "sk-", kind: "secret key", minLength: 40),
            ], wrongKinds: [], prefixExpected: true,
            reference: "https://platform.openai.com/api-keys"),
        KnownKeyFormat(
            provider: "Anthropic", sources: ["anthropic", "claude"],
            variants: [
                .init(prefix: "sk-ant-api", kind: "API key", minLength: 90),
                .init(prefix: "sk-ant-admin", kind: "admin key", minLength: 90),
                .init(prefix: "sk-ant-", kind: "key", minLength: 40),
            ], wrongKinds: [], prefixExpected: true,
            reference: "https://docs.anthropic.com/en/api/overview"),
        KnownKeyFormat(
            provider: "OpenRouter", sources: ["openrouter"],
            variants: [.init(prefix: "sk-or-v1-", kind: "API key", minLength: 73, maxLength: 73)],
            wrongKinds: [], prefixExpected: true,
            reference: "https://openrouter.ai/docs/api-reference/authentication"),
        KnownKeyFormat(
            provider: "GitHub", sources: ["github", "gh"],
            variants: [
                .init(prefix: "github_pat_", kind: "fine-grained personal access token", minLength: 82),
                .init(prefix: "ghp_", kind: "personal access token (classic)", minLength: 40),
                .init(prefix: "gho_", kind: "OAuth access token", minLength: 40),
                .init(prefix: "ghu_", kind: "GitHub App user access token", minLength: 40),
                .init(prefix: "ghs_", kind: "GitHub App installation token", minLength: 40),
                .init(prefix: "ghr_", kind: "refresh token", minLength: 40),
            ], wrongKinds: [], prefixExpected: true,
            reference: "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/"),
        KnownKeyFormat(
            provider: "GitLab", sources: ["gitlab"],
            variants: [
                .init(prefix: "glpat-", kind: "personal access token", minLength: 26),
                .init(prefix: "gloas-", kind: "OAuth application secret", minLength: 26),
                .init(prefix: "gldt-", kind: "deploy token", minLength: 25),
                .init(prefix: "glrt-", kind: "runner authentication token", minLength: 25),
                .init(prefix: "glptt-", kind: "pipeline trigger token", minLength: 26),
            ], wrongKinds: [], prefixExpected: true,
            reference: "https://docs.gitlab.com/security/tokens/"),
        KnownKeyFormat(
            provider: "Slack", sources: ["slack"],
            variants: [
                .init(prefix: "xoxb-", kind: "bot token", minLength: 30),
                .init(prefix: "xoxp-", kind: "user token", minLength: 30),
                .init(prefix: "xoxe.xoxp-", kind: "rotating user token", minLength: 30),
                .init(prefix: "xoxe.xoxb-", kind: "rotating bot token", minLength: 30),
                .init(prefix: "xoxe-", kind: "refresh token", minLength: 30),
                .init(prefix: "xapp-", kind: "app-level token", minLength: 30),
                .init(prefix: "xoxa-", kind: "workspace token", minLength: 30),
            ], wrongKinds: [], prefixExpected: true,
            reference: "https://api.slack.com/concepts/token-types"),
        KnownKeyFormat(
            provider: "Stripe", sources: ["stripe"],
            variants: [
                .init(prefix: "sk_live_", kind: "live secret key", minLength: 32),
                .init(prefix: "sk_test_", kind: "test secret key", minLength: 32),
                .init(prefix: "rk_live_", kind: "live restricted key", minLength: 32),
                .init(prefix: "rk_test_", kind: "test restricted key", minLength: 32),
            ],
            wrongKinds: [("pk_live_", "live publishable key"), ("pk_test_", "test publishable key"), ("whsec_", "webhook signing secret")],
            prefixExpected: true,
            reference: "https://docs.stripe.com/keys"),
        KnownKeyFormat(
            provider: "AWS", sources: ["aws", "amazon"],
            variants: [
                .init(prefix: "AKIA", kind: "access key id", minLength: 20, maxLength: 20),
                .init(prefix: "ASIA", kind: "temporary access key id", minLength: 20, maxLength: 20),
            ], wrongKinds: [], prefixExpected: false,
            reference: "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids"),
        KnownKeyFormat(
            provider: "Google", sources: ["google", "gemini", "google-maps", "youtube", "firebase"],
            variants: [.init(prefix: "AIza", kind: "API key", minLength: 39, maxLength: 39)],
            wrongKinds: [], prefixExpected: true,
            reference: "https://cloud.google.com/docs/authentication/api-keys"),
        KnownKeyFormat(
            provider: "Hugging Face", sources: ["huggingface", "hf"],
            variants: [.init(prefix: "hf_", kind: "user access token", minLength: 37)],
            wrongKinds: [], prefixExpected: true,
            reference: "https://huggingface.co/docs/hub/security-tokens"),
    ]

    /// The format for a source id (case-insensitive), if it is well known.
    public static func format(forSource source: String) -> KnownKeyFormat? {
        let s = source.lowercased()
        return formats.first { $0.sources.contains(s) }
    }

    /// The provider and variant whose prefix `value` starts with (the
    /// longest matching prefix wins, so `sk-ant-` is Anthropic, not OpenAI).
    public static func recognize(_ value: String) -> (format: KnownKeyFormat, variant: KnownKeyFormat.Variant)? {
        var best: (KnownKeyFormat, KnownKeyFormat.Variant)?
        for f in formats {
            for v in f.variants where value.hasPrefix(v.prefix) {
                if best == nil || v.prefix.count > best!.1.prefix.count { best = (f, v) }
            }
        }
        return best
    }

    /// Likely paste mistakes in a key value, as warnings (never containing
    /// the value): surrounding whitespace or quotes, inner whitespace, a
    /// `Bearer ` or `NAME=` prefix, a prefix of another provider or none
    /// of the expected one, a truncated or doubled key.
    public static func warnings(for value: String, field: String = "key", source: String?) -> [String] {
        diagnose(value, field: field, source: source).map(\.message)
    }

    /// ``warnings(for:field:source:)`` as typed ``CredentialWarning``s.
    public static func diagnose(_ value: String, field: String = "key", source: String?) -> [CredentialWarning] {
        var out: [CredentialWarning] = []
        func add(_ kind: CredentialWarning.Kind, _ message: String) { out.append(CredentialWarning(kind, field: field, message)) }
        let label = "the \(field) value"
        if let first = value.first, let last = value.last, first.isWhitespace || last.isWhitespace {
            add(.surroundingWhitespace, "\(label) starts or ends with whitespace (a paste mistake?)")
        }
        var core = value.trimmingCharacters(in: .whitespacesAndNewlines)
        for q in ["\"", "'", "`"] where core.count >= 2 && core.hasPrefix(q) && core.hasSuffix(q) {
            add(.quoted, "\(label) is wrapped in quotes (\(q)…\(q)); the quotes would be stored as part of it")
            core = String(core.dropFirst().dropLast())
        }
        if core.lowercased().hasPrefix("bearer ") {
            add(.bearerPrefix, "\(label) starts with 'Bearer '; store only the token")
            core = String(core.dropFirst(7))
        }
        // `OPENAI_API_KEY=sk-…` pasted whole. Never quote any part of the
        // value (it is a secret), and do not mistake base32 padding
        // (`JBSWY3DP…====`) for an assignment: the name must look like a
        // variable name (contain '_' or end in KEY/TOKEN/SECRET).
        if let eq = core.firstIndex(of: "="), eq != core.startIndex, core.index(after: eq) != core.endIndex,
            core[core.index(after: eq)] != "=",
            core[..<eq].allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }), core[..<eq].first!.isLetter,
            (2...64).contains(core[..<eq].count),
            core[..<eq].contains("_") || ["KEY", "TOKEN", "SECRET"].contains(where: { core[..<eq].hasSuffix($0) })
        {
            add(.assignment, "\(label) looks like an assignment (NAME=VALUE); store only what follows '='")
            core = String(core[core.index(after: eq)...])
        }
        if core.contains(where: { $0.isWhitespace }) {
            add(.innerWhitespace, "\(label) contains whitespace or a line break; keys rarely do")
        }
        let expected = source.flatMap { format(forSource: $0) }
        let seen = recognize(core)
        if let expected {
            if let wrong = expected.wrongKinds.first(where: { core.hasPrefix($0.prefix) }) {
                add(.wrongKeyKind, "\(label) is \(Article.a(expected.provider)) \(expected.provider) \(wrong.kind) ('\(wrong.prefix)…'), not a secret key")
            } else if let seen, seen.format.provider != expected.provider {
                add(
                    .otherProvider,
                    "\(label) looks like \(Article.a(seen.format.provider)) \(seen.format.provider) \(seen.variant.kind) ('\(seen.variant.prefix)…'), but the source is '\(source!)' (\(expected.provider))"
                )
            } else if seen == nil && expected.prefixExpected {
                let prefixes = expected.variants.map { "'\($0.prefix)'" }
                add(.missingPrefix, "\(label) does not start with \(prefixes.joined(separator: ", ")) as \(expected.provider) keys do")
            }
        }
        if let (f, v) = seen, expected == nil || f.provider == expected?.provider {
            if core.count < v.minLength {
                add(
                    .truncated,
                    "\(label) looks truncated: \(Article.a(f.provider)) \(f.provider) \(v.kind) has at least \(v.minLength) characters, this one has \(core.count)"
                )
            } else if let max = v.maxLength, core.count > max {
                add(
                    .tooLong,
                    "\(label) is longer than \(Article.a(f.provider)) \(f.provider) \(v.kind) (\(max) characters, this one has \(core.count)); two values pasted together?"
                )
            }
        }
        return out
    }
}
