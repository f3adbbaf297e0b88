import CofferKit
import Testing

/// How an application reacts to a `CofferError`: a `switch` on the kinds it
/// cares about and a `default` for the rest, so a kind added in a later
/// CofferKit compiles and lands in `default`.
private func reaction(to error: CofferError) -> String {
    switch error.kind {
    case .wrongPassphrase, .locked: return "ask for the passphrase"
    case .busy: return "retry"
    case .itemNotFound: return "offer to create it"
    default: return "show \(error.kind): \(error.message)"
    }
}

@Suite("CofferError kinds")
struct ErrorKindTests {
    /// Every kind and its exit code as docs/exit-codes.md documents it.
    static let documented: [(CofferError.Kind, Int32)] = [
        (.usage, 64),
        (.unavailable, 69),
        (.badData, 65), (.ambiguousName, 65), (.invalidCredential, 65),
        (.vaultNotFound, 66), (.itemNotFound, 66), (.fileNotFound, 66),
        (.internalError, 70),
        (.vaultExists, 73), (.duplicateName, 73), (.cannotCreate, 73),
        (.ioError, 74),
        (.busy, 75),
        (.wrongPassphrase, 77), (.locked, 77), (.permissionDenied, 77),
    ]

    @Test func everyKindHasItsDocumentedExitCode() {
        for (kind, code) in Self.documented {
            #expect(CofferError(kind, "x").exitCode == code, "\(kind)")
        }
        #expect(Set(Self.documented.map(\.0)).count == Self.documented.count, "kinds are distinct")
    }

    @Test func anAppSwitchesWithADefault() {
        #expect(reaction(to: CofferError(.locked, "no session")) == "ask for the passphrase")
        #expect(reaction(to: CofferError(.busy, "busy")) == "retry")
        #expect(reaction(to: CofferError(.badData, "bad")) == "show badData: bad")
        // A kind this app was not built with (one a later CofferKit adds).
        let later = CofferError(CofferError.Kind(rawValue: "someLaterKind"), "new")
        #expect(reaction(to: later) == "show someLaterKind: new")
    }

    @Test func aKindUnknownToThisCofferKitIsAnInternalError() {
        #expect(CofferError(CofferError.Kind(rawValue: "someLaterKind"), "x").exitCode == 70)
    }

    @Test func kindsCompareReadAndHash() {
        let e = CofferError(.itemNotFound, "no item 'x'")
        #expect(e.kind == .itemNotFound)
        #expect(e.kind != .fileNotFound)
        if case .itemNotFound = e.kind {} else { Issue.record("pattern match on a kind") }
        // The readable name is the former case name, as `\(kind)` printed it.
        #expect(CofferError.Kind.wrongPassphrase.rawValue == "wrongPassphrase")
        #expect("\(CofferError.Kind.permissionDenied)" == "permissionDenied")
        #expect(CofferError.Kind(rawValue: "locked") == .locked)
        let counts: [CofferError.Kind: Int] = [.busy: 1, .locked: 2]
        #expect(counts[.locked] == 2)
    }
}
