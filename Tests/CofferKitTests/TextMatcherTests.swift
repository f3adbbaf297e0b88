import Foundation
import Testing

@testable import CofferKit

/// `coffer find`'s byte-wise ASCII matching must agree with Foundation's
/// case- and diacritic-insensitive search, which it replaces for ASCII.
@Suite("find: text matching")
struct TextMatcherTests {
    static func foundation(_ text: String, _ needle: String) -> Bool {
        text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
    }

    @Test("ASCII terms in ASCII text: the same answer as Foundation, on 20,000 random pairs")
    func agreesWithFoundationOnASCII() {
        var rng = SystemRandomNumberGenerator()
        // Few distinct letters so that matches are common.
        let alphabet = Array("aAbBzZ@-._/ 09[]`{~\u{7F}".utf8)
        func random(_ maxLength: Int) -> String {
            let n = Int.random(in: 0...maxLength, using: &rng)
            return String(decoding: (0..<n).map { _ in alphabet.randomElement(using: &rng)! }, as: UTF8.self)
        }
        var matched = 0
        for _ in 0..<20_000 {
            let text = random(12)
            let needle = random(3)
            guard !needle.isEmpty else { continue }
            let want = Self.foundation(text, needle)
            #expect(TextMatcher(needle).matches(text) == want, "'\(text)' ∋ '\(needle)'")
            if want { matched += 1 }
        }
        #expect(matched > 1_000)
    }

    @Test(
        "non-ASCII text or terms go through Foundation",
        arguments: [
            ("personal/café", "CAFE", true), ("CAFÉ", "café", true), ("日本/鍵", "鍵", true),
            ("resume", "résumé", true), ("naïve", "NAIVE", true), ("abc", "abd", false), ("ÅNGSTRÖM", "angstrom", true),
        ])
    func nonASCII(_ text: String, _ needle: String, _ expected: Bool) {
        #expect(TextMatcher(needle).matches(text) == Self.foundation(text, needle))
        #expect(TextMatcher(needle).matches(text) == expected)
    }
}
