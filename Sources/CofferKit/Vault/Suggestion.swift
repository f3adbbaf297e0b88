import CofferSync
import Foundation

/// "Did you mean …?": the closest candidate to a mistyped word, by edit
/// distance (insertions, deletions, substitutions and swaps of neighbours,
/// case-insensitive), when it is close enough to be a plausible typo.
public enum Suggestion {
    /// The candidate nearest to `word`, if its distance is at most half of
    /// the word's length (at least 1, at most 3). Ties go to a candidate with
    /// the same first letter, then to the one that sorts first, so the answer
    /// is the same on every run.
    public static func closest(to word: String, among candidates: some Sequence<String>) -> String? {
        let target = Array(word.lowercased())
        let limit = min(3, max(1, target.count / 2))
        // Lower ranks are better: (distance, 0 if the first letter matches
        // else 1, the candidate itself).
        var best: (distance: Int, initial: Int, candidate: String)?
        for c in candidates where c != word {
            let other = Array(c.lowercased())
            let d = distance(target, other, limit: limit)
            guard d <= limit else { continue }
            let rank = (d, other.first == target.first ? 0 : 1, c)
            if best == nil || rank < best! { best = rank }
        }
        return best?.candidate
    }

    /// Optimal string alignment distance; returns `limit + 1` as soon as it
    /// is certain to exceed `limit` (length difference alone).
    static func distance(_ a: [Character], _ b: [Character], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

/// What a person probably meant by an item name no live item has: the
/// answer of ``Vault/suggestions(forMissing:)``, for the hint of an
/// ``CofferError/Kind/itemNotFound`` error.
public struct MissingNameSuggestion: Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// A name one to three edits away (a typo): `work/opneai` for `work/openai`.
        case typo
        /// Names whose last path component is the name asked for, or a typo
        /// of it: `openai` for `work/openai` (names are paths; people type
        /// the last part).
        case lastComponent
        /// The item's name has a division slash (U+2215, `∕`) where the name
        /// asked for has a `/`: an import keeps a title's `/` that way so
        /// that the title stays one name. The two look the same; address
        /// the item by ``itemID``.
        case divisionSlash
    }

    public var reason: Reason
    /// The names meant, at most ``maxNames``, sorted.
    public var names: [String]
    /// For ``Reason/divisionSlash``: the item's id (address it as `id:`
    /// and its first 8 hex digits).
    public var itemID: ItemID?

    public init(reason: Reason, names: [String], itemID: ItemID?) {
        self.reason = reason
        self.names = names
        self.itemID = itemID
    }

    /// At most this many names are offered.
    public static let maxNames = 3

    /// The suggestion for `name` among the live items' names and ids, or
    /// nil when nothing is near. Checked in this order: the same name with
    /// division slashes, a typo of the whole name, then last components.
    public static func find(for name: String, among items: [(name: String, id: ItemID)]) -> MissingNameSuggestion? {
        let slashed = name.replacingOccurrences(of: "/", with: "\u{2215}")
        if slashed != name, let hit = items.first(where: { $0.name == slashed }) {
            return MissingNameSuggestion(reason: .divisionSlash, names: [hit.name], itemID: hit.id)
        }
        let names = items.map(\.name)
        if let near = Suggestion.closest(to: name, among: names) {
            return MissingNameSuggestion(reason: .typo, names: [near], itemID: nil)
        }
        let wanted = Self.lastComponent(name).lowercased()
        var byLast: [String: [String]] = [:]
        for n in names where n.contains("/") { byLast[Self.lastComponent(n).lowercased(), default: []].append(n) }
        let key = byLast[wanted] != nil ? wanted : Suggestion.closest(to: wanted, among: byLast.keys.sorted())
        guard let key, let matches = byLast[key], !matches.contains(name) else { return nil }
        return MissingNameSuggestion(reason: .lastComponent, names: Array(matches.sorted().prefix(maxNames)), itemID: nil)
    }

    static func lastComponent(_ name: String) -> String {
        name.split(separator: "/").last.map(String.init) ?? name
    }
}
