import CofferTestSupport
import Foundation
import Testing

/// CofferKit says what to do as data and in words that name no command;
/// the command line words it with its commands and options
/// (Sources/coffer/ErrorWords.swift). These are the lines a user of
/// `coffer` reads, byte for byte.
@Suite("errors in the command line's words, black-box")
struct ErrorWordsCLITests {
    @Test func argumentsAreNamedByTheirOptions() {
        let home = TestHome()
        let cases: [([String], String)] = [
            (["generate", "--length", "0"], "coffer: error: --length must be between 1 and 4096, got 0\n"),
            (
                ["generate", "--chars", "bogus"],
                "coffer: error: unknown character class 'bogus' in --chars\ncoffer: hint: use a comma-separated list of lower, upper, digits, symbols (or all)\n"
            ),
            (
                ["generate", "--length", "3"],
                "coffer: error: --length 3 is shorter than the 4 character classes it must contain\ncoffer: hint: use a longer --length or fewer --chars\n"
            ),
            (["generate", "--words", "0"], "coffer: error: --words must be between 1 and 512, got 0\n"),
            (["generate", "--words", "2", "--separator", "\t"], "coffer: error: --separator cannot contain control characters\n"),
        ]
        for (args, expected) in cases {
            let r = home.run(args)
            #expect(r.status == 64 && r.stdout.isEmpty && r.stderr == expected, "\(args): \(r)")
        }
    }

    @Test func remediesAreWordedAsCommands() {
        let home = TestHome()
        let none = home.run(["get", "x"])
        #expect(
            none.status == 66
                && none.stderr == """
                    coffer: error: no vault at \(home.vaultPath)
                    coffer: hint: create one with `coffer init`, or pass --vault PATH

                    """,
            "\(none)")
        home.initVault()
        let missing = home.unlocked(["get", "nothing-like-it"])
        #expect(
            missing.status == 66
                && missing.stderr == """
                    coffer: error: no item named 'nothing-like-it'
                    coffer: hint: list items with `coffer ls`

                    """,
            "\(missing)")
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB").status == 0)
        let prefix = home.unlocked(["mv", "work/", "old-work"])
        #expect(
            prefix.status == 64
                && prefix.stderr == """
                    coffer: error: to move or copy a prefix, end both names with '/'
                    coffer: hint: e.g. `coffer mv work/ old-work/`

                    """,
            "\(prefix)")
    }
}
