import ArgumentParser
import CofferKit
import Foundation

/// Options shared by `coffer generate` and `--generate` on add/edit.
struct GenerateOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Password length in characters, 1–4096 (default 25).", valueName: "n"))
    var length: Int?

    @Option(help: ArgumentHelp("Character classes: a comma-separated list of lower, upper, digits, symbols, or all (default).", valueName: "classes"))
    var chars: String?

    @Option(help: ArgumentHelp("A passphrase of N words from the EFF long wordlist instead (6 gives 77.5 bits).", valueName: "n"))
    var words: Int?

    @Option(help: ArgumentHelp("Between words (default '-').", valueName: "s"))
    var separator: String?

    @Flag(help: "Leave out characters that look alike (0 O o 1 l I | and quotes).")
    var noAmbiguous = false

    /// The same settings as plain values (shared with the `add` fast path,
    /// which has no argument-parser values to read).
    var spec: GenerationSpec {
        GenerationSpec(length: length, chars: chars, words: words, separator: separator, noAmbiguous: noAmbiguous)
    }

    func recipe() throws(CofferError) -> PasswordGenerator.Recipe { try spec.recipe() }
    func generate() throws(CofferError) -> String { try spec.generate() }
    var isUsed: Bool { spec.isUsed }
}

/// Generation settings (`--length`, `--chars`, `--words`, `--separator`,
/// `--no-ambiguous`); all nil/false means the defaults.
struct GenerationSpec: Equatable {
    var length: Int?
    var chars: String?
    var words: Int?
    var separator: String?
    var noAmbiguous = false

    /// The recipe these options describe (exit 64 on a bad combination).
    func recipe() throws(CofferError) -> PasswordGenerator.Recipe {
        if let words {
            guard length == nil, chars == nil, !noAmbiguous else {
                throw CofferError(.usage, "--words cannot be combined with --length, --chars or --no-ambiguous")
            }
            return .words(count: words, separator: separator ?? "-")
        }
        guard separator == nil else { throw CofferError(.usage, "--separator needs --words") }
        let classes = try chars.map { c throws(CofferError) in try PasswordGenerator.parseClasses(c) } ?? PasswordGenerator.CharacterClass.allCases
        return .characters(length: length ?? PasswordGenerator.defaultLength, classes: classes, noAmbiguous: noAmbiguous)
    }

    /// Generates one secret and says its strength on stderr.
    func generate() throws(CofferError) -> String {
        let g = try PasswordGenerator.generate(try recipe())
        Output.note(String(format: "generated a secret of %.1f bits of entropy", g.entropyBits))
        return g.secret
    }

    var isUsed: Bool { length != nil || chars != nil || words != nil || separator != nil || noAmbiguous }
}

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Print a random password or passphrase.",
        discussion: """
            Characters are drawn uniformly at random (libsodium's randombytes_uniform), with at \
            least one of each class; passphrases are words of the EFF long wordlist (7,776 words, \
            12.9 bits each). The entropy in bits is printed on stderr. To store a generated secret \
            without printing it: coffer add NAME --generate, coffer edit NAME --generate [FIELD].
              coffer generate                      # 25 characters, all classes (163 bits)
              coffer generate --length 16 --chars lower,upper,digits --no-ambiguous
              coffer generate --words 6 --separator ' '
            """)

    @OptionGroup var generation: GenerateOptions

    func run() throws {
        Output.out(try generation.generate())
    }
}
