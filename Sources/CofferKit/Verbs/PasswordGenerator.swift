import CofferCrypto
import Foundation

/// Random passwords and passphrases (`coffer generate`, `--generate`).
/// Every choice is uniform through libsodium's `randombytes_uniform`.
public enum PasswordGenerator {
    /// A class of characters a password is drawn from.
    public enum CharacterClass: String, Sendable, CaseIterable {
        case lower, upper, digits, symbols

        public var characters: [Character] {
            switch self {
            case .lower: return Array("abcdefghijklmnopqrstuvwxyz")
            case .upper: return Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            case .digits: return Array("0123456789")
            case .symbols: return Array("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
            }
        }
    }

    /// Characters left out by `--no-ambiguous`: ones that look alike in
    /// common fonts, and quotes that are hard to tell apart.
    public static let ambiguous: Set<Character> = ["0", "O", "o", "1", "l", "I", "|", "`", "'", "\""]

    public static let defaultLength = 25
    public static let maxLength = 4096
    public static let defaultWords = 6
    public static let maxWords = 512

    /// What to generate.
    public enum Recipe: Sendable, Equatable {
        /// `length` characters, with at least one of each class.
        case characters(length: Int, classes: [CharacterClass], noAmbiguous: Bool)
        /// `count` words of the EFF long list joined by `separator`.
        case words(count: Int, separator: String)

        public static let standard = Recipe.characters(length: defaultLength, classes: CharacterClass.allCases, noAmbiguous: false)
    }

    /// A generated secret and its entropy in bits.
    public struct Generated: Sendable {
        public var secret: String
        public var entropyBits: Double
    }

    /// Parses `--chars`: class names separated by commas
    /// (`lower,upper,digits,symbols`), or `all`.
    public static func parseClasses(_ text: String) throws(CofferError) -> [CharacterClass] {
        if text == "all" { return CharacterClass.allCases }
        var out: [CharacterClass] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let c = CharacterClass(rawValue: part.trimmingCharacters(in: .whitespaces)) else {
                throw CofferError(
                    .usage, "unknown character class '\(part)' in the character class list", argument: "classes",
                    hint: "use a comma-separated list of lower, upper, digits, symbols (or all)")
            }
            if !out.contains(c) { out.append(c) }
        }
        return out
    }

    /// Checks a recipe's numbers (exit 64 when out of range).
    public static func check(_ recipe: Recipe) throws(CofferError) {
        switch recipe {
        case .characters(let length, let classes, _):
            guard (1...maxLength).contains(length) else {
                throw CofferError(.usage, "the length must be between 1 and \(maxLength), got \(length)", argument: "length")
            }
            guard !classes.isEmpty else {
                throw CofferError(.usage, "the character class list names no character class", argument: "classes", hint: "use lower, upper, digits, symbols")
            }
            guard length >= classes.count else {
                throw CofferError(
                    .usage, "the length \(length) is shorter than the \(classes.count) character classes it must contain", argument: "length",
                    hint: "use a longer length or fewer character classes")
            }
        case .words(let count, let separator):
            guard (1...maxWords).contains(count) else {
                throw CofferError(.usage, "the word count must be between 1 and \(maxWords), got \(count)", argument: "count")
            }
            guard !separator.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw CofferError(.usage, "the separator cannot contain control characters", argument: "separator")
            }
        }
    }

    public static func generate(_ recipe: Recipe) throws(CofferError) -> Generated {
        try check(recipe)
        switch recipe {
        case .characters(let length, let classes, let noAmbiguous):
            let sets = classes.map { c in c.characters.filter { !noAmbiguous || !ambiguous.contains($0) } }
            let alphabet = sets.flatMap { $0 }
            // Uniform over the passwords that contain every class:
            // draw uniformly, reject those that miss one.
            while true {
                let chars = (0..<length).map { _ in Random.element(of: alphabet) }
                if sets.allSatisfy({ set in chars.contains(where: set.contains) }) {
                    return Generated(secret: String(chars), entropyBits: entropy(length: length, classSizes: sets.map(\.count)))
                }
            }
        case .words(let count, let separator):
            let list = try Wordlist.eff()
            let words = (0..<count).map { _ in Random.element(of: list) }
            return Generated(secret: words.joined(separator: separator), entropyBits: Double(count) * log2(Double(list.count)))
        }
    }

    /// log2 of the number of length-`length` strings over the union of the
    /// classes that contain at least one character of each class
    /// (inclusion–exclusion over the classes left out).
    static func entropy(length: Int, classSizes: [Int]) -> Double {
        // Work in log space: terms are (size)^length, far beyond Double
        // for long passwords; factor out the largest.
        let total = classSizes.reduce(0, +)
        var terms: [(sign: Double, log: Double)] = []
        let n = classSizes.count
        for mask in 0..<(1 << n) {
            var size = total
            var dropped = 0
            for i in 0..<n where mask & (1 << i) != 0 {
                size -= classSizes[i]
                dropped += 1
            }
            guard size > 0 else { continue }
            terms.append((dropped % 2 == 0 ? 1 : -1, Double(length) * log2(Double(size))))
        }
        let top = terms.map(\.log).max() ?? 0
        let sum = terms.reduce(0.0) { $0 + $1.sign * pow(2, $1.log - top) }
        return top + log2(sum)
    }
}

/// The EFF long wordlist, compiled into the binary (Resources/README.md).
public enum Wordlist {
    /// The 7,776 words in dice order.
    public static func eff() throws(CofferError) -> [String] {
        let list = parsed
        guard list.count == 7776 else {
            throw CofferError(
                .internalError, "the built-in wordlist has \(list.count) words instead of 7776", hint: "this coffer was built wrongly; rebuild it")
        }
        return list
    }

    private static let parsed: [String] = {
        let text = String(decoding: PackageResources.eff_large_wordlist_txt, as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            line.split(separator: "\t").last.map(String.init)
        }
    }()
}
