import CofferTestSupport
import Foundation
import Testing

/// `coffer rekey` killed with SIGKILL at the Nth write/fsync/rename of a
/// clean run (strace fault injection) and after random delays
/// (docs/reliability.md): the vault always opens — under the old key with
/// the old passphrase or under the new key with the new one, never both,
/// never neither — with every secret intact, `coffer verify` clean,
/// `PRAGMA integrity_check` ok and its key epoch 0 (old) or 1 (new).
@Suite("faults: SIGKILL during coffer rekey", .serialized, .enabled(if: FaultSettings.enabled))
struct RekeyFaultTests {
    static let cases: [CrashCase] = [
        CrashCase(
            name: "rekey", args: ["rekey"], folders: [CrashCase.vaultDir], bundles: { _ in [] }, next: ["status"]),
        CrashCase(
            name: "rekey-new-passphrase", args: ["rekey", "--new-passphrase-file", "new-passphrase.txt"],
            folders: [CrashCase.vaultDir], bundles: { _ in [] }, next: ["status"], newPassphrase: "a new passphrase"),
    ]

    /// The vault's key epoch as stored (0 when the row is absent), read
    /// with sqlite3 alone.
    static func epoch(_ home: TestHome) -> String {
        let r = Spawn.timed(
            "/usr/bin/sqlite3", [home.vaultPath, "SELECT count(*) FROM keyEpoch"], environment: home.environment, workDir: home.root.path)
        return r.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The checks of the crash suite, plus: verify clean and a stored
    /// epoch that matches the passphrase that opens the vault.
    static func check(_ home: TestHome, _ c: CrashCase, state: String, trial: String) -> [String] {
        var problems = CrashFaultTests.check(home, c, old: state, new: state, trial: trial)
        let epoch = epoch(home)
        if epoch != "0" && epoch != "1" { problems.append("\(c.name) \(trial): key epoch rows: \(epoch)") }
        if let new = c.newPassphrase {
            // Epoch 1 opens only with the new passphrase, epoch 0 only with the old.
            let saved = home.passphrase
            home.passphrase = epoch == "1" ? new : saved
            defer { home.passphrase = saved }
            let v = home.unlocked(["verify"])
            if v.status != 0 { problems.append("\(c.name) \(trial): epoch \(epoch) does not verify with its passphrase: \(v)") }
        } else {
            let v = home.unlocked(["verify"])
            if v.status != 0 { problems.append("\(c.name) \(trial): verify after the kill: \(v)") }
        }
        return problems
    }

    /// What a user sees (names and values) before: a rekey changes no value.
    static func state(_ c: CrashCase) -> (state: String, duration: Double) {
        let home = CrashFixture.shared.copy()
        let before = CrashFaultTests.stateAfterKill(home, c).state ?? "?"
        let start = Date()
        let r = home.timed(c.args, unlocked: true, stdin: c.stdin)
        let duration = Date().timeIntervalSince(start)
        #expect(r.status == 0, "\(c.name) fails without a fault: \(r)")
        #expect(epoch(home) == "1")
        // With a new passphrase the state names which one opens the vault.
        let after = CrashFaultTests.stateAfterKill(home, c).state ?? "?"
        let strip = { (s: String) in s.split(separator: "\n").filter { !$0.hasPrefix("opens with") }.joined(separator: "\n") }
        #expect(strip(before) == strip(after), "a rekey changes no value")
        return (before, duration)
    }

    @Test(.enabled(if: FaultSettings.hasStrace), arguments: cases)
    func killAtTheNthSyscall(_ c: CrashCase) throws {
        var rng = SeededGenerator(seed: FaultSettings.seed ^ c.seed)
        let (before, _) = Self.state(c)
        var points = CrashFaultTests.syscallCounts(c).flatMap { (name, n) in (1...max(n, 1)).map { (name, $0) } }
        points.shuffle(using: &rng)
        // Twice the crash suite's sample: a rekey is one long transaction.
        let chosen = points.prefix(2 * FaultSettings.syscallTrials)
        var killed = 0
        var epochs: [String: Int] = [:]
        var problems: [String] = []
        for (name, n) in chosen {
            let home = CrashFixture.shared.copy()
            let r = CrashFaultTests.runUnderStrace(home, c, extra: ["-o", "/dev/null", "-e", "trace=\(name)", "-e", "inject=\(name):signal=KILL:when=\(n)"])
            if r.status == 137 { killed += 1 } else if r.status != 0 { problems.append("\(c.name) \(name)#\(n): exit \(r.status) without a kill: \(r)") }
            epochs[Self.epoch(home), default: 0] += 1
            // Old and new show the same values; which passphrase opens is
            // checked against the stored epoch.
            let opened = CrashFaultTests.stateAfterKill(home, c).state ?? "does not open"
            let strip = { (s: String) in s.split(separator: "\n").filter { !$0.hasPrefix("opens with") }.joined(separator: "\n") }
            if strip(opened) != strip(before) { problems.append("\(c.name) \(name)#\(n): values changed:\n\(opened)") }
            problems += Self.check(home, c, state: opened, trial: "\(name)#\(n)")
        }
        print(
            "faults: \(c.name): seed \(FaultSettings.seed), \(chosen.count) syscall trials of \(points.count) points, \(killed) killed, epochs after the kill \(epochs), \(problems.count) problems"
        )
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test(arguments: cases)
    func killAfterARandomDelay(_ c: CrashCase) throws {
        var rng = SeededGenerator(seed: FaultSettings.seed &+ c.seed)
        let (before, duration) = Self.state(c)
        var problems: [String] = []
        var killed = 0
        var epochs: [String: Int] = [:]
        for _ in 0..<FaultSettings.delayTrials {
            let home = CrashFixture.shared.copy()
            let delay = Double.random(in: 0...max(duration, 0.05), using: &rng)
            let pw = home.path("passphrase.txt")
            FileManager.default.createFile(atPath: pw, contents: Data((home.passphrase + "\n").utf8))
            let args = (c.args + ["--passphrase-file", pw]).map { "'\($0)'" }.joined(separator: " ")
            let script = "\"$COFFER\" \(args) < /dev/null & p=$!; sleep \(String(format: "%.3f", delay)); kill -KILL $p 2>/dev/null; wait $p"
            let r = home.shell(script)
            if r.status == 137 { killed += 1 }
            epochs[Self.epoch(home), default: 0] += 1
            let opened = CrashFaultTests.stateAfterKill(home, c).state ?? "does not open"
            let strip = { (s: String) in s.split(separator: "\n").filter { !$0.hasPrefix("opens with") }.joined(separator: "\n") }
            if strip(opened) != strip(before) { problems.append("\(c.name) delay \(delay): values changed:\n\(opened)") }
            problems += Self.check(home, c, state: opened, trial: "delay \(String(format: "%.3f", delay))s")
        }
        print(
            "faults: \(c.name): seed \(FaultSettings.seed), \(FaultSettings.delayTrials) delay trials (clean run \(String(format: "%.2f", duration)) s), \(killed) killed, epochs after the kill \(epochs), \(problems.count) problems"
        )
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
