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

    @Flag(name: [.customShort("n"), .long], help: "No symbols: lower, upper and digits (pass's spelling of --chars lower,upper,digits).")
    var noSymbols = false

    /// The same settings as plain values (shared with the `add` fast path,
    /// which has no argument-parser values to read).
    var spec: GenerationSpec {
        GenerationSpec(length: length, chars: chars, words: words, separator: separator, noAmbiguous: noAmbiguous, noSymbols: noSymbols)
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
    var noSymbols = false

    /// The recipe these options describe (exit 64 on a bad combination).
    func recipe() throws(CofferError) -> PasswordGenerator.Recipe {
        if let words {
            guard length == nil, chars == nil, !noAmbiguous, !noSymbols else {
                throw CofferError(.usage, "--words cannot be combined with --length, --chars, --no-symbols or --no-ambiguous")
            }
            return .words(count: words, separator: separator ?? "-")
        }
        guard separator == nil else { throw CofferError(.usage, "--separator needs --words") }
        guard !(noSymbols && chars != nil) else {
            throw CofferError(.usage, "--no-symbols cannot be combined with --chars", hint: "leave 'symbols' out of --chars instead")
        }
        var classes = try chars.map { c throws(CofferError) in try PasswordGenerator.parseClasses(c) } ?? PasswordGenerator.CharacterClass.allCases
        if noSymbols { classes.removeAll { $0 == .symbols } }
        return .characters(length: length ?? PasswordGenerator.defaultLength, classes: classes, noAmbiguous: noAmbiguous)
    }

    /// Generates one secret and says its strength on stderr.
    func generate() throws(CofferError) -> String {
        let g = try PasswordGenerator.generate(try recipe())
        Output.note(String(format: "generated a secret of %.1f bits of entropy", g.entropyBits))
        return g.secret
    }

    var isUsed: Bool { length != nil || chars != nil || words != nil || separator != nil || noAmbiguous || noSymbols }
}

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Print a random password or passphrase (and store it, given a NAME, as pass does).",
        discussion: """
            Characters are drawn uniformly at random (libsodium's randombytes_uniform), with at \
            least one of each class; passphrases are words of the EFF long wordlist (7,776 words, \
            12.9 bits each). The entropy in bits is printed on stderr. To store a generated secret \
            without printing it: coffer add NAME --generate, coffer edit NAME --generate [FIELD].
              coffer generate                      # 25 characters, all classes (163 bits)
              coffer generate --length 16 --chars lower,upper,digits --no-ambiguous
              coffer generate --words 6 --separator ' '
            As pass does, `coffer generate NAME [LENGTH]` also stores the password as a new login \
            item NAME (--in-place sets the password of an existing item, keeping its other fields) \
            and prints it; -n/--no-symbols leaves symbols out.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Store the password as this login item too (pass's `pass generate NAME`).")
    var name: String?

    @Argument(help: ArgumentHelp("Password length (pass's spelling of --length).", valueName: "length"))
    var passLength: Int?

    @Flag(name: [.customShort("i"), .long], help: "With NAME: replace the password of the existing item NAME, keeping its other fields.")
    var inPlace = false

    @OptionGroup var generation: GenerateOptions

    func run() throws {
        try checkUsage()
        var spec = generation.spec
        if let passLength { spec.length = passLength }
        guard let name else {
            Output.out(try spec.generate())
            return
        }
        _ = try Vault.normalizeName(name)
        _ = try spec.recipe()
        let vault = try options.unlockForWriting()
        if inPlace {
            let current = try vault.item(named: name)
            guard let field = current.type.primaryFieldName ?? current.primaryField?.name else {
                throw CofferError(
                    .usage, "'\(current.name)' has no main secret field to replace",
                    hint: "use `coffer edit \(ShellWords.quote(current.name)) --generate-field FIELD`")
            }
            let secret = try spec.generate()
            var edit = ItemEdit()
            edit.setFields = [Field(name: field, value: secret, isSecret: true)]
            let item = try vault.edit(name, edit)
            Output.note("updated \(item.name): new \(field)")
            Output.out(secret)
        } else {
            if try vault.contains(name) {
                throw CofferError(
                    .duplicateName, "an item named '\(try Vault.normalizeName(name))' already exists",
                    hint: "add --in-place to replace its password, or choose another name")
            }
            let secret = try spec.generate()
            let item = try vault.add(ItemDraft(name: name, type: .login, fields: [Field(name: "password", value: secret, isSecret: true)]))
            Output.note("added \(item.name) (login)")
            Output.out(secret)
        }
    }

    func checkUsage() throws(CofferError) {
        if passLength != nil, generation.length != nil {
            throw CofferError(.usage, "the length is given twice (LENGTH and --length)", hint: "give one of them; see `coffer generate --help`")
        }
        if inPlace, name == nil {
            throw CofferError(.usage, "--in-place needs the NAME of the item whose password to replace", hint: "see `coffer generate --help`")
        }
        if name == nil, options.vault != nil || options.passphraseFd != nil || options.passphraseFile != nil {
            throw CofferError(
                .usage, "vault options need a NAME to store the password under",
                hint: "give a NAME (coffer generate NAME [LENGTH]); see `coffer generate --help`")
        }
    }
}
