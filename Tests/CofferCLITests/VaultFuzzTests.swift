import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A seeded random mutator over a real vault file: bit flips anywhere or
/// in the schema page, truncations, zeroed regions and the schema edits of
/// issue 12. Every mutant is opened by `coffer get`, `ls` and `verify`: no
/// run may end with a signal, every failure is one of the documented exit
/// codes, and a `get` that succeeds prints the value stored, never another.
/// A few dozen trials run in every `swift test`; `make test-faults`
/// (COFFER_FAULTS=1) runs VaultFuzzFaultTests with many more.
enum VaultFuzz {
    /// SplitMix64: small, seeded, the same sequence on every machine.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    }

    static let sqlEdits = [
        "ALTER TABLE vault RENAME COLUMN formatVersion TO J;",
        "UPDATE vault SET kdfIterations = 5000000000;",
        "PRAGMA ignore_check_constraints = 1; UPDATE vault SET kdfMemoryKiB = -1;",
        "PRAGMA ignore_check_constraints = 1; UPDATE localReplica SET counter = -1;",
        "PRAGMA ignore_check_constraints = 1; UPDATE replica SET counter = 9223372036854775807;",
        "PRAGMA ignore_check_constraints = 1; UPDATE fieldVersion SET counter = 9223372036854775807 WHERE isTombstone = 0;",
        "UPDATE fieldVersion SET vector = x'00';",
        "UPDATE fieldVersion SET writtenAt = 'late';",
        "PRAGMA ignore_check_constraints = 1; UPDATE item SET policy = 'elsewhere';",
        "UPDATE item SET nameHash = x'00';",
        "UPDATE fieldHistory SET supersededAt = x'01';",
        "ALTER TABLE replica RENAME COLUMN counter TO c;",
        "ALTER TABLE item RENAME COLUMN record TO r;",
        "DROP TABLE fieldHistory;",
        "DELETE FROM localReplica;",
        "DELETE FROM vault;",
    ]

    /// Documented exit codes a damaged vault may produce (docs/exit-codes.md).
    static let allowed: Set<Int32> = [0, 65, 66, 77]

    static func run(trials: Int, seed: UInt64) throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "api-key", "--secret", "key"], stdin: "SECRET-A\n").status == 0)
        #expect(home.unlocked(["add", "b", "--type", "api-key", "--secret", "key"], stdin: "SECRET-B\n").status == 0)
        #expect(home.unlocked(["edit", "a", "--secret", "key"], stdin: "SECRET-A2\n").status == 0)
        let original = home.vaultBytes()
        #expect(original.count > 4096)
        var rng = Random(state: seed)
        var outcomes: [Int32: Int] = [:]
        for trial in 0..<trials {
            var bytes = [UInt8](original)
            var what = ""
            switch rng.below(5) {
            case 0:
                let n = 1 + rng.below(4)
                for _ in 0..<n { bytes[rng.below(bytes.count)] ^= UInt8(1 << rng.below(8)) }
                what = "\(n) bit flips"
            case 1:
                // The first page holds the header and sqlite_master.
                for _ in 0..<2 { bytes[100 + rng.below(3996)] ^= UInt8(1 << rng.below(8)) }
                what = "2 bit flips in the schema page"
            case 2:
                let at = rng.below(bytes.count)
                bytes.removeLast(bytes.count - at)
                what = "truncated to \(at) bytes"
            case 3:
                let at = rng.below(bytes.count)
                for i in at..<min(bytes.count, at + 512) { bytes[i] = 0 }
                what = "512 zero bytes at \(at)"
            default:
                let edit = sqlEdits[rng.below(sqlEdits.count)]
                try Data(bytes).write(to: URL(fileURLWithPath: home.vaultPath))
                VaultTamperingTests.sql(home.vaultPath, edit)
                bytes = [UInt8](home.vaultBytes())
                what = edit
            }
            for suffix in ["-journal", "-wal", "-shm"] { unlink(home.vaultPath + suffix) }
            try Data(bytes).write(to: URL(fileURLWithPath: home.vaultPath))
            for args in [["get", "a"], ["ls"], ["verify"]] {
                let r = home.unlocked(args)
                outcomes[r.status, default: 0] += 1
                #expect(r.status < 128, "trial \(trial) (\(what)) \(args) ended with a signal: \(r)")
                #expect(allowed.contains(r.status), "trial \(trial) (\(what)) \(args): \(r)")
                if args == ["get", "a"] && r.status == 0 { #expect(r.out == "SECRET-A2", "trial \(trial) (\(what)): \(r)") }
                if r.status != 0 {
                    #expect(r.stderr.contains("coffer: error: "), "trial \(trial) (\(what)) \(args): \(r)")
                    #expect(!r.stderr.contains("SECRET"), "trial \(trial) (\(what)): \(r)")
                }
            }
        }
        print("vault fuzz: \(trials) trials, seed \(seed), exit codes \(outcomes.sorted { $0.key < $1.key })")
    }
}

@Suite("vault file fuzzing (bounded)")
struct VaultFuzzTests {
    @Test func seededMutantsNeverKillCoffer() throws {
        try VaultFuzz.run(trials: 30, seed: 12)
    }
}

@Suite("vault file fuzzing (long)", .enabled(if: ProcessInfo.processInfo.environment["COFFER_FAULTS"] == "1"))
struct VaultFuzzFaultTests {
    @Test func manySeededMutantsNeverKillCoffer() throws {
        let seed = ProcessInfo.processInfo.environment["COFFER_FUZZ_SEED"].flatMap(UInt64.init) ?? 2026
        try VaultFuzz.run(trials: 400, seed: seed)
    }
}
