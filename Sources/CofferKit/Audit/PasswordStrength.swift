import Foundation

/// An estimate of how many guesses a password costs an attacker who knows
/// how people choose passwords, in bits (log2 of the guesses).
///
/// The estimate splits the password into the cheapest sequence of
/// patterns: common passwords and dictionary words (from the shipped word
/// list, with capitals and l33t substitutions), keyboard walks (QWERTY and
/// the numeric keypad), repeats, alphabetic and numeric sequences, and
/// dates; every character no pattern covers costs the size of its class
/// (26 letters, 10 digits, 33 symbols). So `Password1!` is about 10 bits,
/// not the ~65 bits its length and character mix would suggest. The
/// method follows Dropbox's zxcvbn (whose frequency lists it ships),
/// simplified; docs/audit.md describes it.
///
/// ```swift
/// let e = PasswordStrength.estimate("Password1!")
/// e.bits        // ≈ 10.4
/// e.isWeak      // true (below PasswordStrength.weakThreshold)
/// e.reason      // "built from a common password and 2 other characters"
/// ```
///
/// The estimate never stores or reports the password or any part of it.
public enum PasswordStrength {
    /// Below this many bits a password is weak (``Estimate/isWeak``):
    /// 2^50 ≈ 10^15 guesses, about a day for one GPU against a fast
    /// unsalted hash (10^10 guesses a second). docs/audit.md explains the
    /// choice; `coffer audit --min-bits` changes it.
    public static let weakThreshold: Double = 50

    /// Passwords longer than this many characters are estimated on their
    /// first `maximumAnalysedLength` characters; the rest counts as random
    /// characters (no one types such a password, and it keeps the work
    /// bounded).
    public static let maximumAnalysedLength = 256

    /// A kind of pattern the estimate found.
    public enum Pattern: String, Sendable, CaseIterable, Codable, Comparable {
        case commonPassword = "common-password"
        case dictionaryWord = "dictionary-word"
        case name
        case keyboardWalk = "keyboard-walk"
        case repeated
        case sequence
        case date
        case random

        /// Words for people, as used in ``Estimate/reason``.
        public var phrase: String {
            switch self {
            case .commonPassword: return "a common password"
            case .dictionaryWord: return "a dictionary word"
            case .name: return "a common name"
            case .keyboardWalk: return "a keyboard walk"
            case .repeated: return "repeated characters"
            case .sequence: return "a sequence"
            case .date: return "a date or year"
            case .random: return "other characters"
            }
        }

        public static func < (a: Pattern, b: Pattern) -> Bool {
            (allCases.firstIndex(of: a) ?? 0) < (allCases.firstIndex(of: b) ?? 0)
        }
    }

    /// The result: the bits, the patterns of the cheapest decomposition,
    /// and a reason for people. Contains nothing of the password itself
    /// except its length.
    public struct Estimate: Sendable, Equatable {
        /// log2 of the estimated number of guesses.
        public var bits: Double
        /// The password's length in characters (Unicode scalars).
        public var length: Int
        /// The patterns of the cheapest decomposition, those covering most
        /// characters first, characters no pattern covers (``Pattern/random``)
        /// last.
        public var patterns: [PatternCount]

        /// A pattern and how many characters it covers.
        public struct PatternCount: Sendable, Equatable {
            public var pattern: Pattern
            public var characters: Int
        }

        /// Below ``PasswordStrength/weakThreshold``.
        public var isWeak: Bool { isWeak(threshold: PasswordStrength.weakThreshold) }

        public func isWeak(threshold: Double) -> Bool { bits < threshold }

        /// One phrase saying what the estimate rests on, e.g. "built from
        /// a common password and 2 other characters", "only 6 random
        /// characters". Never contains the password.
        public var reason: String {
            let found = patterns.filter { $0.pattern != .random }
            let randomCount = patterns.first { $0.pattern == .random }?.characters ?? 0
            if length == 0 { return "empty" }
            if found.isEmpty {
                return "\(length) random-looking character\(length == 1 ? "" : "s")"
            }
            var parts = found.map(\.pattern.phrase)
            if randomCount > 0 { parts.append("\(randomCount) other character\(randomCount == 1 ? "" : "s")") }
            let list = parts.count <= 1 ? parts.joined() : parts.dropLast().joined(separator: ", ") + " and " + parts.last!
            return "built from " + list
        }
    }

    /// Estimates the strength of `password`. Pure and thread-safe; the
    /// word list is loaded once, on first use.
    public static func estimate(_ password: String) -> Estimate {
        let scalars = Array(password.unicodeScalars)
        let analysed = Array(scalars.prefix(maximumAnalysedLength))
        var analysis = Analysis(analysed)
        var result = analysis.run()
        if scalars.count > analysed.count {
            for s in scalars[analysed.count...] { result.bits += characterBits(s) }
            result.add(Pattern.random, scalars.count - analysed.count)
        }
        let found: [(key: Pattern, value: Int)] = result.counts.filter { $0.key != Pattern.random }
            .sorted { a, b in a.value != b.value ? a.value > b.value : a.key < b.key }
        var patterns: [Estimate.PatternCount] = found.map { Estimate.PatternCount(pattern: $0.key, characters: $0.value) }
        if let r = result.counts[Pattern.random] { patterns.append(Estimate.PatternCount(pattern: Pattern.random, characters: r)) }
        return Estimate(bits: result.bits, length: scalars.count, patterns: patterns)
    }

    /// The bits of one character no pattern covers: log2 of its class.
    static func characterBits(_ s: Unicode.Scalar) -> Double {
        switch s.value {
        case 0x61...0x7A, 0x41...0x5A: return log2(26)
        case 0x30...0x39: return log2(10)
        case 0x20...0x7E: return log2(33)
        default: return log2(100)
        }
    }
}

// MARK: - Analysis

/// One candidate pattern over `start..<end` of the analysed scalars.
private struct Match {
    var start: Int
    var end: Int
    var bits: Double
    var pattern: PasswordStrength.Pattern
}

private struct AnalysisResult {
    var bits: Double
    var counts: [PasswordStrength.Pattern: Int]

    mutating func add(_ p: PasswordStrength.Pattern, _ n: Int) { counts[p, default: 0] += n }
}

private struct Analysis {
    let s: [Unicode.Scalar]
    /// Lower-cased ASCII value of each scalar (0 for non-ASCII).
    let lower: [UInt8]
    var matches: [[Match]]

    init(_ s: [Unicode.Scalar]) {
        self.s = s
        lower = s.map { $0.isASCII ? UInt8(ascii: $0.properties.lowercaseMapping.unicodeScalars.first ?? $0) : 0 }
        matches = Array(repeating: [], count: s.count + 1)
    }

    mutating func run() -> AnalysisResult {
        let n = s.count
        if n == 0 { return AnalysisResult(bits: 0, counts: [:]) }
        findDictionaryWords()
        findKeyboardWalks()
        findRepeats()
        findSequences()
        findDates()
        // Cheapest decomposition: best[j] is the fewest bits for s[0..<j].
        var best = [Double](repeating: .infinity, count: n + 1)
        var via = [Match?](repeating: nil, count: n + 1)
        best[0] = 0
        for j in 1...n {
            let brute = best[j - 1] + PasswordStrength.characterBits(s[j - 1])
            best[j] = brute
            via[j] = Match(start: j - 1, end: j, bits: brute - best[j - 1], pattern: .random)
            for m in matches[j] where best[m.start] + m.bits < best[j] {
                best[j] = best[m.start] + m.bits
                via[j] = m
            }
        }
        var counts: [PasswordStrength.Pattern: Int] = [:]
        var j = n
        var patternsUsed = 0
        while j > 0, let m = via[j] {
            counts[m.pattern, default: 0] += m.end - m.start
            if m.pattern != .random { patternsUsed += 1 }
            j = m.start
        }
        // Each further pattern is a choice the attacker must also guess
        // (which kinds, in which order): one bit per pattern beyond the first.
        let bits = best[n] + Double(max(0, patternsUsed - 1))
        return AnalysisResult(bits: bits, counts: counts)
    }

    mutating func add(_ start: Int, _ end: Int, _ bits: Double, _ pattern: PasswordStrength.Pattern) {
        matches[end].append(Match(start: start, end: end, bits: max(bits, 0), pattern: pattern))
    }

    // MARK: Dictionary

    static let leet: [UInt8: UInt8] = [
        UInt8(ascii: "4"): UInt8(ascii: "a"), UInt8(ascii: "@"): UInt8(ascii: "a"), UInt8(ascii: "8"): UInt8(ascii: "b"),
        UInt8(ascii: "("): UInt8(ascii: "c"), UInt8(ascii: "{"): UInt8(ascii: "c"), UInt8(ascii: "3"): UInt8(ascii: "e"),
        UInt8(ascii: "6"): UInt8(ascii: "g"), UInt8(ascii: "9"): UInt8(ascii: "g"), UInt8(ascii: "1"): UInt8(ascii: "i"),
        UInt8(ascii: "!"): UInt8(ascii: "i"), UInt8(ascii: "|"): UInt8(ascii: "l"), UInt8(ascii: "0"): UInt8(ascii: "o"),
        UInt8(ascii: "$"): UInt8(ascii: "s"), UInt8(ascii: "5"): UInt8(ascii: "s"), UInt8(ascii: "7"): UInt8(ascii: "t"),
        UInt8(ascii: "+"): UInt8(ascii: "t"), UInt8(ascii: "2"): UInt8(ascii: "z"), UInt8(ascii: "%"): UInt8(ascii: "x"),
    ]

    mutating func findDictionaryWords() {
        let dict = WordList.shared
        scanWords(lower, substituted: nil, dict: dict)
        // l33t: the same scan with look-alike characters replaced (1 read
        // as "i", and again as "l"), when there is any.
        if lower.contains(where: { Analysis.leet[$0] != nil }) {
            var subbed = lower
            var changed = [Bool](repeating: false, count: lower.count)
            for (i, c) in lower.enumerated() {
                if let r = Analysis.leet[c] {
                    subbed[i] = r
                    changed[i] = true
                }
            }
            scanWords(subbed, substituted: changed, dict: dict)
            if lower.contains(UInt8(ascii: "1")) {
                for (i, c) in lower.enumerated() where c == UInt8(ascii: "1") { subbed[i] = UInt8(ascii: "l") }
                scanWords(subbed, substituted: changed, dict: dict)
            }
        }
    }

    private mutating func scanWords(_ text: [UInt8], substituted: [Bool]?, dict: WordList) {
        let n = text.count
        for i in 0..<n where text[i] != 0 {
            var h = WordList.seed
            var j = i
            while j < n, j - i < WordList.maxLength, text[j] != 0 {
                h = WordList.step(h, text[j])
                j += 1
                guard let entry = dict.entries[h] else { break }
                guard entry.rank > 0, j - i >= 3 || entry.list == .passwords && j - i >= 2 else { continue }
                var subs = 0
                if let substituted { for k in i..<j where substituted[k] { subs += 1 } }
                if substituted != nil && subs == 0 { continue } // found by the plain scan
                let bits = log2(Double(entry.rank)) + capitalBits(i, j) + Double(subs)
                let pattern: PasswordStrength.Pattern =
                    switch entry.list {
                    case .passwords: .commonPassword
                    case .english: .dictionaryWord
                    case .names: .name
                    }
                add(i, j, bits, pattern)
            }
        }
    }

    /// Extra bits for the capitals of a word: none for all lower case, one
    /// for the usual Capitalised/ALL CAPS/lasT forms, else the number of
    /// ways to place that many capitals.
    func capitalBits(_ i: Int, _ j: Int) -> Double {
        var upper = 0
        var lowerCount = 0
        for k in i..<j {
            let v = s[k].value
            if (0x41...0x5A).contains(v) { upper += 1 } else if (0x61...0x7A).contains(v) { lowerCount += 1 }
        }
        if upper == 0 { return 0 }
        let first = (0x41...0x5A).contains(s[i].value)
        let last = (0x41...0x5A).contains(s[j - 1].value)
        if lowerCount == 0 || (upper == 1 && (first || last)) { return 1 }
        var ways = 0.0
        for k in 1...min(upper, lowerCount) { ways += binomial(upper + lowerCount, k) }
        return log2(max(ways, 2))
    }

    // MARK: Keyboard walks

    mutating func findKeyboardWalks() {
        let n = s.count
        for graph in [Keyboard.qwerty, Keyboard.keypad] {
            var i = 0
            while i < n - 2 {
                var j = i + 1
                var turns = 0
                var shifted = 0
                var lastDirection = -1
                if Keyboard.isShifted(s[i]) { shifted += 1 }
                while j < n, let d = graph.direction(from: s[j - 1], to: s[j]) {
                    if d != lastDirection {
                        turns += 1
                        lastDirection = d
                    }
                    if Keyboard.isShifted(s[j]) { shifted += 1 }
                    j += 1
                    if j - i >= 3 {
                        let len = j - i
                        var bits = log2(Double(graph.keyCount)) + Double(turns) * log2(graph.averageDegree) + log2(Double(len))
                        if shifted > 0 { bits += shifted == len ? 1 : log2(binomial(len, min(shifted, len - shifted)) + 1) }
                        add(i, j, bits, .keyboardWalk)
                    }
                }
                i += 1
            }
        }
    }

    // MARK: Repeats

    mutating func findRepeats() {
        let n = s.count
        for i in 0..<n {
            for m in 1...min(16, max(1, (n - i) / 2)) where i + 2 * m <= n {
                var k = 1
                while i + (k + 1) * m <= n, (0..<m).allSatisfy({ s[i + k * m + $0] == s[i + $0] }) { k += 1 }
                guard (m == 1 && k >= 3) || (m > 1 && k >= 2) else { continue }
                var base = 0.0
                for t in i..<(i + m) { base += PasswordStrength.characterBits(s[t]) }
                if m > 1 { base = min(base, PasswordStrength.estimate(String(String.UnicodeScalarView(s[i..<(i + m)]))).bits) }
                add(i, i + k * m, base + log2(Double(k)), .repeated)
            }
        }
    }

    // MARK: Sequences

    mutating func findSequences() {
        let n = s.count
        guard n >= 3 else { return }
        func kind(_ c: Unicode.Scalar) -> Int {
            switch c.value {
            case 0x30...0x39: return 1
            case 0x61...0x7A: return 2
            case 0x41...0x5A: return 3
            default: return 0
            }
        }
        for i in 0..<(n - 2) {
            let k = kind(s[i])
            guard k != 0 else { continue }
            let delta = Int(s[i + 1].value) - Int(s[i].value)
            guard delta != 0, abs(delta) <= 2, kind(s[i + 1]) == k else { continue }
            var j = i + 2
            while j < n, kind(s[j]) == k, Int(s[j].value) - Int(s[j - 1].value) == delta { j += 1 }
            guard j - i >= 3 else { continue }
            let first = s[i]
            var startBits: Double
            if "aAzZ019".unicodeScalars.contains(first) {
                startBits = 2
            } else {
                startBits = k == 1 ? log2(10) : log2(26)
            }
            if delta < 0 { startBits += 1 }
            if abs(delta) > 1 { startBits += 1 }
            for e in (i + 3)...j { add(i, e, startBits + log2(Double(e - i)), .sequence) }
        }
    }

    // MARK: Dates

    mutating func findDates() {
        let n = s.count
        func digit(_ k: Int) -> Int? {
            let v = s[k].value
            return (0x30...0x39).contains(v) ? Int(v - 0x30) : nil
        }
        func number(_ a: Int, _ b: Int) -> Int? {
            var x = 0
            for k in a..<b {
                guard let d = digit(k) else { return nil }
                x = x * 10 + d
            }
            return x
        }
        let referenceYear = 2025
        func yearBits(_ y: Int) -> Double { log2(Double(max(abs(y - referenceYear), 20))) }
        func fullYear(_ y: Int, digits: Int) -> Int? {
            if digits == 4 { return (1900...2099).contains(y) ? y : nil }
            return y < 50 ? 2000 + y : 1900 + y
        }
        func validDayMonth(_ d: Int, _ m: Int) -> Bool { (1...31).contains(d) && (1...12).contains(m) }
        // A year alone.
        for i in 0..<max(0, n - 3) {
            if let y = number(i, i + 4), (1900...2099).contains(y) { add(i, i + 4, yearBits(y), .date) }
        }
        // Digits only: ddmmyy, mmddyy, yymmdd, ddmmyyyy, mmddyyyy, yyyymmdd
        // (and d/m without leading zeros, 5 and 7 digits, in the same way).
        for i in 0..<n {
            for len in [6, 8] where i + len <= n {
                guard number(i, i + len) != nil else { continue }
                let yd = len == 8 ? 4 : 2
                var ok = false
                var bestYear = 0
                // year last
                if let y = number(i + len - yd, i + len), let fy = fullYear(y, digits: yd),
                    let a = number(i, i + 2), let b = number(i + 2, i + 4),
                    validDayMonth(a, b) || validDayMonth(b, a)
                {
                    ok = true
                    bestYear = fy
                }
                // year first
                if !ok, let y = number(i, i + yd), let fy = fullYear(y, digits: yd),
                    let a = number(i + yd, i + yd + 2), let b = number(i + yd + 2, i + yd + 4),
                    validDayMonth(b, a)
                {
                    ok = true
                    bestYear = fy
                }
                if ok { add(i, i + len, log2(365) + yearBits(bestYear), .date) }
            }
        }
        // With separators: d/m/y in any order of day and month, year of 2
        // or 4 digits first or last, one separator used twice.
        let separators: Set<UInt32> = [0x2F, 0x2D, 0x2E, 0x5F, 0x20, 0x5C]
        for i in 0..<n {
            guard digit(i) != nil else { continue }
            for len in 6...10 where i + len <= n {
                var parts: [(Int, Int)] = []
                var sep: UInt32? = nil
                var start = i
                var valid = true
                for k in i..<(i + len) {
                    if digit(k) != nil { continue }
                    guard separators.contains(s[k].value), sep == nil || sep == s[k].value, k > start else {
                        valid = false
                        break
                    }
                    sep = s[k].value
                    parts.append((start, k))
                    start = k + 1
                }
                guard valid, sep != nil, start < i + len else { continue }
                parts.append((start, i + len))
                guard parts.count == 3 else { continue }
                let lens = parts.map { $0.1 - $0.0 }
                let vals = parts.compactMap { number($0.0, $0.1) }
                guard vals.count == 3 else { continue }
                var year: Int?
                if lens[2] == 4 || lens[2] == 2, lens[0] <= 2, lens[1] <= 2,
                    validDayMonth(vals[0], vals[1]) || validDayMonth(vals[1], vals[0])
                {
                    year = fullYear(vals[2], digits: lens[2])
                } else if lens[0] == 4, lens[1] <= 2, lens[2] <= 2, validDayMonth(vals[2], vals[1]) {
                    year = fullYear(vals[0], digits: 4)
                }
                if let y = year { add(i, i + len, log2(365) + yearBits(y) + 2, .date) }
            }
        }
    }
}

private func binomial(_ n: Int, _ k: Int) -> Double {
    guard k >= 0, k <= n else { return 0 }
    var r = 1.0
    for i in 0..<min(k, n - k) { r = r * Double(n - i) / Double(i + 1) }
    return r
}

// MARK: - Keyboards

private struct Keyboard: Sendable {
    /// For each key (lower-case or unshifted character), its neighbours by
    /// direction slot.
    let neighbours: [UInt32: [UInt32: Int]]
    let keyCount: Int
    let averageDegree: Double

    func direction(from a: Unicode.Scalar, to b: Unicode.Scalar) -> Int? {
        neighbours[Keyboard.base(a)]?[Keyboard.base(b)]
    }

    static let shiftPairs: [(Character, Character)] = Array(zip("`1234567890-=[]\\;',./", "~!@#$%^&*()_+{}|:\"<>?"))
    static let unshift: [UInt32: UInt32] = {
        var m: [UInt32: UInt32] = [:]
        for (a, b) in shiftPairs { m[b.unicodeScalars.first!.value] = a.unicodeScalars.first!.value }
        return m
    }()

    /// The unshifted key of a character.
    static func base(_ c: Unicode.Scalar) -> UInt32 {
        if (0x41...0x5A).contains(c.value) { return c.value + 0x20 }
        return unshift[c.value] ?? c.value
    }

    static func isShifted(_ c: Unicode.Scalar) -> Bool { (0x41...0x5A).contains(c.value) || unshift[c.value] != nil }

    /// Builds a graph from rows of keys and, per row, how far (in keys)
    /// the row is shifted right of the one above it, in half keys.
    init(rows: [String], halfOffsets: [Int], diagonal: Bool) {
        var positions: [UInt32: (Int, Int)] = [:] // key → (row, x in half keys)
        for (r, row) in rows.enumerated() {
            for (c, ch) in row.unicodeScalars.enumerated() where ch != " " {
                positions[ch.value] = (r, halfOffsets[r] + 2 * c)
            }
        }
        var n: [UInt32: [UInt32: Int]] = [:]
        var degrees = 0
        for (a, pa) in positions {
            var out: [UInt32: Int] = [:]
            for (b, pb) in positions where a != b {
                let dr = pb.0 - pa.0
                let dx = pb.1 - pa.1
                let adjacent: Bool
                if diagonal {
                    adjacent = abs(dr) <= 1 && abs(dx) <= 2
                } else {
                    adjacent = (dr == 0 && abs(dx) == 2) || (abs(dr) == 1 && abs(dx) <= 1)
                }
                if adjacent { out[b] = (dr + 1) * 5 + (dx + 2) }
            }
            degrees += out.count
            n[a] = out
        }
        neighbours = n
        keyCount = positions.count
        averageDegree = Double(degrees) / Double(max(positions.count, 1))
    }

    static let qwerty = Keyboard(
        rows: ["`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./"], halfOffsets: [0, 3, 4, 5], diagonal: false)
    static let keypad = Keyboard(rows: ["789", "456", "123", " 0"], halfOffsets: [0, 0, 0, 0], diagonal: true)
}

// MARK: - Word list

/// The shipped word list (Resources/common-words.txt), as a hash table of
/// every word and every prefix of one, keyed by a 64-bit FNV-1a hash of
/// the lower-case bytes, so that a scan stops as soon as no word can
/// continue.
final class WordList: Sendable {
    enum List: UInt8, Sendable { case passwords, english, names }

    struct Entry: Sendable {
        /// 1-based rank in its list; 0 for a prefix that is not a word.
        var rank: Int32
        var list: List
    }

    let entries: [UInt64: Entry]
    let wordCount: Int
    static let maxLength = 24

    static let seed: UInt64 = 0xcbf2_9ce4_8422_2325
    @inline(__always) static func step(_ h: UInt64, _ byte: UInt8) -> UInt64 { (h ^ UInt64(byte)) &* 0x100_0000_01b3 }

    static let shared = WordList(text: PackageResources.common_words_txt)

    init(text: [UInt8]) {
        var entries: [UInt64: Entry] = [:]
        entries.reserveCapacity(160_000)
        var list = List.passwords
        var rank: Int32 = 0
        var count = 0
        var lineStart = 0
        func handle(_ line: ArraySlice<UInt8>) {
            guard let first = line.first, first != UInt8(ascii: "#") else { return }
            if first == UInt8(ascii: "@") {
                let name = String(decoding: line, as: UTF8.self)
                switch name {
                case "@list passwords": list = .passwords
                case "@list english": list = .english
                default: list = .names
                }
                rank = 0
                return
            }
            guard line.count <= WordList.maxLength else { return }
            rank += 1
            count += 1
            var h = WordList.seed
            for (k, b) in line.enumerated() {
                let lowered = (0x41...0x5A).contains(b) ? b + 0x20 : b
                h = WordList.step(h, lowered)
                let isWord = k == line.count - 1
                if let existing = entries[h] {
                    if isWord && (existing.rank == 0 || existing.rank > rank) {
                        entries[h] = Entry(rank: rank, list: list)
                    }
                } else {
                    entries[h] = Entry(rank: isWord ? rank : 0, list: list)
                }
            }
        }
        for (i, b) in text.enumerated() where b == UInt8(ascii: "\n") {
            handle(text[lineStart..<i])
            lineStart = i + 1
        }
        if lineStart < text.count { handle(text[lineStart...]) }
        self.entries = entries
        self.wordCount = count
    }
}
