import CofferTestSupport
import Foundation
import Testing

/// Options where git, gopass and pass users put them (issue 28, item 1;
/// docs/user-guide.md, "Where options go").
@Suite("command-line spellings, black-box")
struct SpellingCLITests {
    /// A vault somewhere else than the default, named only with --vault.
    static func elsewhere() -> (TestHome, String) {
        let home = TestHome()
        let vault = home.path("other.coffer")
        let r = home.unlocked(["init", "--vault", vault] + FastKDF.arguments)
        precondition(r.status == 0, "\(r)")
        return (home, vault)
    }

    @Test func vaultOptionsBeforeTheVerb() {
        let (home, vault) = Self.elsewhere()
        let add = home.run(["--vault", vault, "--passphrase-fd", "3", "add", "work/openai", "--type", "api-key"], stdin: "sk-1\n", fd3: home.passphrase + "\n")
        #expect(add.status == 0, "\(add)")
        // The `=` spelling, the fast `get` path, and a nested verb.
        let get = home.run(["--vault=\(vault)", "--passphrase-fd", "3", "get", "work/openai"], fd3: home.passphrase + "\n")
        #expect(get.status == 0 && get.stdout == "sk-1\n", "\(get)")
        let ls = home.run(["--passphrase-fd", "3", "--vault", vault, "ls"], fd3: home.passphrase + "\n")
        #expect(ls.status == 0 && ls.stdout.contains("work/openai"), "\(ls)")
        let nested = home.run(["--vault", vault, "--passphrase-fd", "3", "requirements", "ls"], fd3: home.passphrase + "\n")
        #expect(nested.status == 0, "\(nested)")
        // The default vault was never created: the option reached the verb.
        #expect(!FileManager.default.fileExists(atPath: home.vaultPath))
    }

    @Test func anOptionOtherToolsSpellDifferentlyGetsTheNearestOne() {
        let home = TestHome()
        let clip = home.run(["clip", "x", "--timeout", "5"])
        UsageErrorCLITests.expectUsageShape(clip, message: "Unknown option '--timeout'", hintContains: "did you mean `--clear-after`?")
        let length = home.run(["generate", "-l", "12"])
        UsageErrorCLITests.expectUsageShape(length, message: "Unknown option '-l'", hintContains: "did you mean `--length`?")
        let size = home.run(["generate", "--size", "12"])
        UsageErrorCLITests.expectUsageShape(size, message: "Unknown option '--size'", hintContains: "did you mean `--length`? (see `coffer generate --help`)")
        // Nothing near: the usage line, as before.
        let bogus = home.run(["generate", "--zzzzzz"])
        UsageErrorCLITests.expectUsageShape(bogus, message: "Unknown option '--zzzzzz'", hintContains: "Usage: coffer generate")
        // A global option before a verb that has no vault options is refused.
        let generate = home.run(["--vault", home.path("v"), "generate"])
        #expect(generate.status == 64, "\(generate)")
    }

    @Test func passSpellingsOfGenerate() throws {
        let (home, vault) = Self.elsewhere()
        // -n / --no-symbols: letters and digits only.
        for flag in ["-n", "--no-symbols"] {
            let r = home.run(["generate", flag, "--length", "64"])
            #expect(r.status == 0, "\(r)")
            let password = r.stdout.trimmingCharacters(in: .newlines)
            #expect(password.count == 64 && password.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }, "\(r)")
        }
        // `generate NAME LENGTH` stores a login and prints its password.
        let stored = home.unlocked(["generate", "--vault", vault, "web/mail", "30", "-n"])
        #expect(stored.status == 0, "\(stored)")
        let printed = stored.stdout.trimmingCharacters(in: .newlines)
        #expect(printed.count == 30, "\(stored)")
        let get = home.unlocked(["get", "--vault", vault, "web/mail"])
        #expect(get.stdout == printed + "\n", "\(get)")
        let show = home.unlocked(["show", "--vault", vault, "web/mail", "--json"])
        #expect(show.stdout.contains("\"login\""), "\(show)")
        // An existing name is refused and left as it was; --in-place replaces the password.
        let before = home.vaultBytes(vault)
        let again = home.unlocked(["generate", "--vault", vault, "web/mail"])
        #expect(again.status == 73 && again.stderr.contains("--in-place") && again.stdout.isEmpty, "\(again)")
        #expect(home.vaultBytes(vault) == before)
        let replaced = home.unlocked(["generate", "--vault", vault, "web/mail", "--in-place", "40"])
        #expect(replaced.status == 0, "\(replaced)")
        let newPassword = replaced.stdout.trimmingCharacters(in: .newlines)
        #expect(newPassword.count == 40 && newPassword != printed)
        #expect(home.unlocked(["get", "--vault", vault, "web/mail"]).stdout == newPassword + "\n")
        // Usage rules.
        UsageErrorCLITests.expectUsageShape(
            home.run(["generate", "x", "20", "--length", "20"]), message: "the length is given twice (LENGTH and --length)", hintContains: "give one")
        UsageErrorCLITests.expectUsageShape(
            home.run(["generate", "--in-place"]), message: "--in-place needs the NAME of the item whose password to replace",
            hintContains: "coffer generate --help")
        UsageErrorCLITests.expectUsageShape(
            home.run(["generate", "-n", "--chars", "lower"]), message: "--no-symbols cannot be combined with --chars", hintContains: "symbols")
        #expect(home.unlocked(["generate", "--vault", vault, "nope", "--in-place"]).status == 66)
    }
}
