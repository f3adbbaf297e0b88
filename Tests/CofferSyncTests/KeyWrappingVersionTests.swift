import CofferCrypto
import Testing

@testable import CofferSync

/// The passphrase wrapping's version (docs/sync.md §Passphrase changes):
/// the same winner on every replica whatever the order of imports.
@Suite struct KeyWrappingVersionTests {
    static func id(_ b: UInt8) -> ReplicaID { ReplicaID(bytes: [UInt8](repeating: b, count: 16))! }
    let a = id(0xaa), b = id(0xbb), c = id(0xcc)

    /// What a replica holds after importing `incoming` (as Vault.resolveKeyWrapping does).
    static func apply(_ local: KeyWrappingVersion, _ incoming: KeyWrappingVersion) -> KeyWrappingVersion {
        switch KeyWrappingVersion.resolve(local: local, incoming: incoming) {
        case .same, .keepLocal: return local
        case .adopt: return incoming
        case .concurrentAdopt(let m): return KeyWrappingVersion(vector: m, changedBy: incoming.changedBy, changedAt: incoming.changedAt)
        case .concurrentKeep(let m): return KeyWrappingVersion(vector: m, changedBy: local.changedBy, changedAt: local.changedAt)
        }
    }

    @Test func aLaterChangeSupersedesAndAnOlderOneIsIgnored() {
        let first = KeyWrappingVersion.initial.next(by: a, at: 5)
        let second = first.next(by: b, at: 1) // an earlier clock does not matter
        #expect(KeyWrappingVersion.resolve(local: first, incoming: second) == .adopt)
        #expect(KeyWrappingVersion.resolve(local: second, incoming: first) == .keepLocal)
        #expect(KeyWrappingVersion.resolve(local: second, incoming: second) == .same)
        #expect(KeyWrappingVersion.resolve(local: .initial, incoming: first) == .adopt)
    }

    @Test func concurrentChangesConvergeInEveryOrder() {
        let base = KeyWrappingVersion.initial.next(by: c, at: 1)
        let changes = [base.next(by: a, at: 9_999), base.next(by: b, at: 2), base.next(by: c, at: 3)]
        // bb's dot is the largest of the concurrent ones that are not cc's
        // own successor; the rule picks by dot, never by time.
        var results: [KeyWrappingVersion] = []
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            for start in 0..<3 {
                var held = changes[start]
                for i in order { held = Self.apply(held, changes[i]) }
                results.append(held)
            }
        }
        #expect(Set(results.map(\.encoded)).count == 1, "every order and every starting replica ends on one version")
        let winner = results[0]
        #expect(winner.changedBy == c, "cc:2 is the largest dot (cc > bb > aa)")
        #expect(winner.vector == VersionVector([a: 1, b: 1, c: 2]))
        // Importing the winner again, or any loser, changes nothing.
        for ch in changes { #expect(Self.apply(winner, ch) == winner) }
    }

    @Test func encodingRoundTripsAndRejectsInconsistentVersions() throws {
        let v = KeyWrappingVersion.initial.next(by: a, at: 42).next(by: b, at: 43)
        #expect(try KeyWrappingVersion(decoding: v.encoded) == v)
        #expect(try KeyWrappingVersion(decoding: KeyWrappingVersion.initial.encoded) == .initial)
        // A changer with no entry in the vector.
        let bad = KeyWrappingVersion(vector: VersionVector([a: 1]), changedBy: b, changedAt: 1)
        #expect(throws: FormatError.self) { try KeyWrappingVersion(decoding: bad.encoded) }
        // Trailing bytes.
        #expect(throws: FormatError.self) { try KeyWrappingVersion(decoding: v.encoded + [0]) }
    }
}
