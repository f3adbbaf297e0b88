import CofferKit
import CofferTestSupport
import Testing

/// What an application reads from a `CofferError` about what to do: the
/// remedy as data (an action it may offer itself) and the hint in words
/// that name no `coffer` command or option, which it can show its users.
@Suite("CofferError remedies")
struct RemedyTests {
    /// No command text and no option name: what an app shows must make
    /// sense without the coffer command line.
    static func expectNeutral(_ e: CofferError, sourceLocation: SourceLocation = #_sourceLocation) {
        for text in [e.message, e.hint ?? ""] {
            #expect(!text.contains("`coffer") && !text.contains("--"), "\(text)", sourceLocation: sourceLocation)
        }
    }

    @Test func aMissingItemSaysListTheItemsAsData() throws {
        let box = try TemporaryVault()
        let e = #expect(throws: CofferError.self) { _ = try box.vault.item(named: "nope") }
        #expect(e?.kind == .itemNotFound && e?.remedy?.action == .listItems, "\(String(describing: e))")
        #expect(e?.hint == "list the vault's items" && e?.hint == e?.remedy?.text)
        if let e { Self.expectNeutral(e) }
    }

    @Test func aMissingVaultNamesThePathToCreate() {
        let dir = TemporaryDirectory(prefix: "coffer-remedy")
        let path = dir.path("none.coffer")
        let e = #expect(throws: CofferError.self) { _ = try VaultFile.open(path: path) }
        #expect(e?.kind == .vaultNotFound && e?.remedy?.action == .createVault && e?.remedy?.path == path, "\(String(describing: e))")
        if let e { Self.expectNeutral(e) }
    }

    @Test func anArgumentErrorNamesTheArgumentOfTheCall() {
        let e = #expect(throws: CofferError.self) {
            _ = try PasswordGenerator.generate(.characters(length: 0, classes: [.lower], noAmbiguous: false))
        }
        #expect(e?.kind == .usage && e?.argument == "length" && e?.message == "the length must be between 1 and 4096, got 0", "\(String(describing: e))")
        let words = #expect(throws: CofferError.self) { _ = try PasswordGenerator.generate(.words(count: 0, separator: "-")) }
        #expect(words?.argument == "count", "\(String(describing: words))")
        if let e { Self.expectNeutral(e) }
    }

    /// Words alone replace the remedy (they no longer say what its data
    /// would); a remedy replaces words alone.
    @Test func hintAndRemedyStayOneAnswer() {
        var e = CofferError(.itemNotFound, "no item named 'x'", remedy: .init(.listItems, "list the vault's items"))
        #expect(e.hint == "list the vault's items")
        e.hint = "did you mean 'y'?"
        #expect(e.remedy == nil && e.hint == "did you mean 'y'?")
        e.remedy = .init(.listItems, "list the vault's items")
        #expect(e.hint == "list the vault's items")
        #expect(e.description == "no item named 'x' (list the vault's items)")
    }

    /// An app switches on the actions it offers, with a `default` for the
    /// rest: an action a later CofferKit adds lands there and shows its text.
    @Test func anAppSwitchesOnActionsWithADefault() {
        func offer(_ r: CofferError.Remedy) -> String {
            switch r.action {
            case .listItems: return "show the item list"
            case .unlockAgain: return "show the unlock sheet"
            default: return r.text
            }
        }
        #expect(offer(.init(.listItems, "list the vault's items")) == "show the item list")
        #expect(offer(.init(.init(rawValue: "someLaterAction"), "do the new thing")) == "do the new thing")
        #expect(CofferError.Remedy.Action.verifyVault.rawValue == "verifyVault" && "\(CofferError.Remedy.Action.adoptKey)" == "adoptKey")
    }
}
