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
