extension CredentialRequirements {
    /// The field a lookup of `type` reads.
    static func lookupField(_ type: CredentialType) -> String? {
        switch type {
        case .apiKey, .apiKeyWithEmail: return "key"
        case .email: return "email"
        case .login: return "password"
        case .custom: return nil
        }
    }

    package func candidates(forSource sourceID: String, type: CredentialType, today: Day = .today) throws(CofferError) -> [Item] {
        CredentialRequirements.rank(try items(forSource: sourceID), type: type, today: today)
    }

    static func rank(_ items: [Item], type: CredentialType, today: Day) -> [Item] {
        let field = lookupField(type)
        let holding = field.map { f in items.filter { $0.field(f) != nil } } ?? items
        func both(_ i: Item) -> Bool { type == .apiKeyWithEmail && i.type == .apiKeyWithEmail && i.field("key") != nil && i.field("email") != nil }
        return holding.sorted { a, b in
            let ba = both(a)
            let bb = both(b)
            if ba != bb { return ba }
            if let field {
                let ra = typeRank(a.type, field: field)
                let rb = typeRank(b.type, field: field)
                if ra != rb { return ra < rb }
            }
            return isPreferred(a, over: b, today: today)
        }
    }

    /// A warning when more than one item answers lookups of `type` for
    /// `sourceID`, naming the one that is used.
    static func ambiguityWarning(_ ranked: [Item], sourceID: String) -> CredentialWarning? {
        guard ranked.count > 1 else { return nil }
        return CredentialWarning(
            .ambiguousSource,
            "\(ranked.count) items hold a credential for source '\(sourceID)'; lookups by source use '\(ranked[0].name)' "
                + "(not expired first, then the most recently updated); remove or re-source the others: "
                + ranked.dropFirst().map { "'\($0.name)'" }.joined(separator: ", "))
    }
}
