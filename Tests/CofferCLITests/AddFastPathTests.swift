import CofferTestSupport
import Foundation
import Testing

/// `coffer add` with a session takes a path without argument-parser for its
/// common forms (Sources/coffer/AddFastPath.swift). These run every command
/// line twice, on two vaults in the same state: once as typed (the fast path
/// where it applies) and once with `--vault PATH` added twice, which only
/// argument-parser handles; output, messages, exit codes and the stored
/// items must be the same.
@Suite("add: the parser-free path behaves like the parsed command")
struct AddFastPathTests {
    /// A fresh vault with a session, and that session's environment.
    static func sessionHome() throws -> (TestHome, [String: String]) {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["unlock", "--shell", "sh"])
        let prefix = "export COFFER_SESSION='"
        guard r.status == 0, r.out.hasPrefix(prefix), r.out.hasSuffix("';") else {
            throw AddFastPathFailure("unlock failed: \(r)")
        }
        return (home, ["COFFER_SESSION": String(r.out.dropFirst(prefix.count).dropLast(2))])
    }

    struct Case: Sendable, CustomStringConvertible {
        var args: [String]
        var stdin: String
        /// The exit status both paths must give.
        var status: Int32
        var description: String { args.joined(separator: " ") + (stdin.isEmpty ? "" : " <<< \(stdin.debugDescription)") }
    }

    /// Successes, refusals before and after unlocking, input errors, and
    /// forms the fast path leaves to argument-parser; in this order, so the
    /// duplicate-name cases meet an existing item.
    static let cases: [Case] = [
        Case(args: ["add", "a/one"], stdin: "sk-one-1234567890\n", status: 0),
        Case(args: ["add", "a/one"], stdin: "sk-again\n", status: 73),
        Case(args: ["add", "A/One"], stdin: "sk-again\n", status: 0),
        Case(
            args: ["add", "--type", "login", "a/two", "--field", "username=me", "--url", "https://example.com", "--tag", "t1", "--tag", "t2"],
            stdin: "hunter2\n", status: 0),
        Case(args: ["add", "a/three", "--type", "note"], stdin: "", status: 64),
        Case(args: ["add", "a/four", "--type", "custom", "--field", "user=u", "--secret", "token", "--secret", "pin"], stdin: "tok\n", status: 64),
        Case(args: ["add", "a/five", "--type", "custom", "--field", "user=u", "--secret", "token"], stdin: "tok-5\n", status: 0),
        Case(args: ["add", "/bad"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/six", "--field", "novalue"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/seven", "--field", "key=sk-on-the-command-line"], stdin: "", status: 0),
        Case(args: ["add", "a/eight", "--source", "openai"], stdin: "not-an-openai-key\n", status: 0),
        Case(
            args: ["add", "a/nine", "--source", "openai", "--type", "api-key-with-email", "--field", "email=me@example.com"],
            stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ\n", status: 0),
        Case(args: ["add", "a/ten", "--type", "bogus"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/eleven", "--type", "login", "--type", "note"], stdin: "x\n", status: 0),
        Case(args: ["add"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/twelve", "extra"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/thirteen", "--tag"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/fourteen", "--tag", "-x"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/fifteen", "--nope", "v"], stdin: "x\n", status: 64),
        Case(args: ["add", "a/sixteen", "--url", "https://a", "--url", "https://b"], stdin: "pw\n", status: 0),
        Case(args: ["add", "a/seventeen", "--type", "email"], stdin: "", status: 0),
        Case(args: ["add", "a/eighteen", "--type", "email", "--field", "email=x@example.com", "--tag", "mail"], stdin: "", status: 0),
        Case(args: ["add", "a/nineteen", "--field", "key=sk-x", "--secret", "key"], stdin: "sk-y\n", status: 64),
        Case(args: ["add", "help"], stdin: "x\n", status: 0),
        Case(args: ["add", "a/twenty", "--source", "help"], stdin: "x\n", status: 0),
    ]

    /// The same arguments through argument-parser: `--vault PATH` twice
    /// right after the verb (argument-parser takes the last; the fast path
    /// takes the option once only, FastPath.withoutVaultOption).
    static func parsed(_ args: [String], vault: String) -> [String] {
        guard args.first == "add" else { return args }
        return ["add", "--vault", vault, "--vault", vault] + args.dropFirst()
    }

    @Test func everyCaseGivesTheSameResultOnBothPaths() throws {
        let (fastHome, fastEnv) = try Self.sessionHome()
        let (parsedHome, parsedEnv) = try Self.sessionHome()
        for c in Self.cases {
            let fast = fastHome.run(c.args, stdin: c.stdin, env: fastEnv)
            let parsed = parsedHome.run(Self.parsed(c.args, vault: parsedHome.vaultPath), stdin: c.stdin, env: parsedEnv)
            #expect(fast.status == c.status && parsed.status == c.status, "\(c)\nfast: \(fast)\nparsed: \(parsed)")
            #expect(fast.stdout == parsed.stdout, "\(c)\nfast: \(fast)\nparsed: \(parsed)")
            // Usage text names the binary the same way on both paths; the
            // vault path differs only where a message names it.
            #expect(
                fast.stderr == parsed.stderr.replacingOccurrences(of: parsedHome.vaultPath, with: fastHome.vaultPath), "\(c)\nfast: \(fast)\nparsed: \(parsed)")
            #expect(fast.stdout.isEmpty || fast.status == 0, "\(c): \(fast)")
        }
        // What was stored is the same, value by value.
        let fastList = fastHome.run(["ls"], env: fastEnv)
        let parsedList = parsedHome.run(["ls"], env: parsedEnv)
        #expect(fastList.status == 0 && fastList.stdout == parsedList.stdout, "\(fastList)\n\(parsedList)")
        for (name, field) in [
            ("a/one", "key"), ("a/two", "password"), ("a/two", "username"), ("a/two", "url"), ("a/five", "token"), ("a/seven", "key"), ("a/nine", "email"),
            ("a/eighteen", "email"),
        ] {
            let f = fastHome.run(["get", name, "--field", field], env: fastEnv)
            let p = parsedHome.run(["get", name, "--field", field], env: parsedEnv)
            #expect(f.status == 0 && f.stdout == p.stdout, "\(name) \(field): \(f) \(p)")
        }
        let show = fastHome.run(["show", "a/two"], env: fastEnv)
        #expect(show.stdout.contains("t1") && show.stdout.contains("t2"), "\(show)")
    }

    @Test func theFastPathStoresWhatItWasGivenAndRefusesWhatItMust() throws {
        let (home, env) = try Self.sessionHome()
        let before = home.vaultBytes()
        // Nothing is written by a refusal: a bad name, an empty value.
        #expect(home.run(["add", "/bad"], stdin: "x\n", env: env).status == 64)
        #expect(home.run(["add", "a/empty"], stdin: "", env: env).status == 64)
        #expect(home.vaultBytes() == before)
        let ok = home.run(["add", "work/key", "--tag", "ci"], stdin: "fast-value-123\n", env: env)
        #expect(ok.status == 0 && ok.stdout.isEmpty && ok.stderr == "coffer: added work/key (api-key)\n", "\(ok)")
        #expect(home.run(["get", "work/key"], env: env).out == "fast-value-123")
        let dup = home.run(["add", "work/key"], stdin: "sk-other\n", env: env)
        #expect(dup.status == 73, "\(dup)")
        #expect(dup.stderr.hasPrefix("coffer: error: an item named 'work/key' already exists"), "\(dup)")
        #expect(home.run(["get", "work/key"], env: env).out == "fast-value-123")
        // A session that ended is refused the same way as by `get`.
        home.run(["lock"], env: env)
        let locked = home.run(["add", "work/other"], stdin: "v\n", env: env)
        let lockedParsed = home.run(Self.parsed(["add", "work/other"], vault: home.vaultPath), stdin: "v\n", env: env)
        #expect(locked.status == 77 && locked.status == lockedParsed.status && locked.stderr == lockedParsed.stderr, "\(locked)\n\(lockedParsed)")
    }
}

struct AddFastPathFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// The prompt on a terminal (util-linux `script` gives `add` a
/// pseudo-terminal): the fast path asks as the parsed command does, without
/// echo, and stores the typed value.
@Suite("add on a terminal: both paths prompt the same way", .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct AddFastPathTerminalInteropTests {
    @Test func thePromptIsTheSameOnBothPaths() throws {
        let (home, env) = try AddFastPathTests.sessionHome()
        func typed(_ args: [String], value: String) -> CLIResult {
            let command = ([CofferBinary.path] + args).map { "'\($0)'" }.joined(separator: " ")
            // The value is typed a second after start, once the prompt has
            // turned echo off.
            return Spawn.run(
                "/bin/sh", ["-c", "(sleep 1; printf '%s\\n' \"$0\") | script -qec \"$1\" /dev/null", value, command],
                stdin: nil, fd3: nil, environment: home.environment.merging(env) { $1 }, workDir: home.root.path)
        }
        let fast = typed(["add", "tty/one", "--type", "login"], value: "typed-secret-1")
        let parsed = typed(AddFastPathTests.parsed(["add", "tty/two", "--type", "login"], vault: home.vaultPath), value: "typed-secret-2")
        #expect(fast.status == 0 && parsed.status == 0, "\(fast)\n\(parsed)")
        #expect(fast.stdout.contains("Value for password: "), "\(fast)")
        #expect(fast.stdout.replacingOccurrences(of: "tty/one", with: "tty/two") == parsed.stdout, "\(fast)\n\(parsed)")
        #expect(!fast.stdout.contains("typed-secret-1"), "the value was echoed: \(fast)")
        #expect(home.run(["get", "tty/one"], env: env).out == "typed-secret-1")
        #expect(home.run(["get", "tty/two"], env: env).out == "typed-secret-2")
    }
}
