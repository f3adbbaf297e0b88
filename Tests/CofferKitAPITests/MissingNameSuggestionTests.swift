import CofferKit
import Testing

/// What a person probably meant by a name no item has (issue 28 item 2).
@Suite("missing-name suggestions")
struct MissingNameSuggestionTests {
    static let a = ItemID(bytes: [UInt8](repeating: 0xA1, count: 16))!
    static let b = ItemID(bytes: [UInt8](repeating: 0xB2, count: 16))!
    static let c = ItemID(bytes: [UInt8](repeating: 0xC3, count: 16))!

    @Test func aTypoOfTheWholeNameComesFirst() {
        let s = MissingNameSuggestion.find(for: "work/opneai", among: [("work/openai", Self.a), ("openai", Self.b)])
        #expect(s == MissingNameSuggestion(reason: .typo, names: ["work/openai"], itemID: nil))
    }

    @Test func theLastPathComponentFindsEveryFolder() {
        let items = [("work/openai", Self.a), ("home/OpenAI", Self.b), ("work/anthropic", Self.c)]
        let s = MissingNameSuggestion.find(for: "openai", among: items)
        #expect(s?.reason == .lastComponent)
        #expect(s?.names == ["home/OpenAI", "work/openai"])
        // A typo of the last component.
        #expect(MissingNameSuggestion.find(for: "antrhopic", among: items)?.names == ["work/anthropic"])
        // Nothing near: no suggestion.
        #expect(MissingNameSuggestion.find(for: "bank", among: items) == nil)
    }

    @Test func atMostThreeNamesAreOffered() {
        let items = (1...5).map { ("f\($0)/key", ItemID(bytes: [UInt8](repeating: UInt8($0), count: 16))!) }
        #expect(MissingNameSuggestion.find(for: "key", among: items)?.names == ["f1/key", "f2/key", "f3/key"])
    }

    @Test func aDivisionSlashNamesTheItemByID() {
        let s = MissingNameSuggestion.find(for: "web/site", among: [("web\u{2215}site", Self.a), ("web/sites", Self.b)])
        #expect(s == MissingNameSuggestion(reason: .divisionSlash, names: ["web\u{2215}site"], itemID: Self.a))
    }
}
