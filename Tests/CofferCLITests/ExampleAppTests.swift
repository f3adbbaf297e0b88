import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Examples/KeychainApp (`coffer-example`), run as a user would: it opens
/// the vault through the shell session or a passphrase, stores and reads a
/// login and an API key, and sees a change `coffer edit` makes.
@Suite("coffer-example app, black-box", .enabled(if: FileManager.default.isExecutableFile(atPath: ExampleBinary.path)))
struct ExampleAppTests {
    @Test func demoStoresALoginAndAnAPIKeyTheCommandLineSees() {
        let home = TestHome()
        home.initVault()
        let r = Spawn.run(ExampleBinary.path, ["demo", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("login: ada@example.org at https://example.org/login, password corr… (21 characters)"), "\(r)")
        #expect(r.stdout.contains("api key for source 'example': ex-0… (23 characters)"), "\(r)")
        #expect(!r.stdout.contains("correct-horse-battery") && !r.stderr.contains("correct-horse-battery"), "no secret printed")
        #expect(home.unlocked(["get", "example/login"]).out == "correct-horse-battery")
        #expect(home.unlocked(["get", "example/login", "--field", "username"]).out == "ada@example.org")
        #expect(home.unlocked(["get", "example/api-key"]).out == "ex-0123456789abcdefghij")
    }

    @Test func opensThroughTheShellSession() {
        let home = TestHome()
        home.initVault()
        let unlock = home.unlocked(["unlock", "--shell", "sh"])
        guard let range = unlock.stdout.range(of: #"cs1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}"#, options: .regularExpression) else {
            Issue.record("no session token: \(unlock)")
            return
        }
        var env = home.environment
        env["COFFER_SESSION"] = String(unlock.stdout[range])
        var r = Spawn.run(ExampleBinary.path, ["demo"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 0 && r.stdout.contains("api key for source 'example'"), "\(r)")
        // A session that ended is an error (77), not a silent prompt.
        #expect(home.run(["lock"], env: ["COFFER_SESSION": env["COFFER_SESSION"]!]).status == 0)
        r = Spawn.run(ExampleBinary.path, ["demo"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        #expect(r.status == 77 && r.stderr.hasPrefix("coffer-example: session ended"), "\(r)")
        // No session, no passphrase, no terminal: 77 with what to do.
        r = Spawn.run(ExampleBinary.path, ["demo"], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 77 && r.stderr.contains("no terminal"), "\(r)")
        r = Spawn.run(ExampleBinary.path, ["watch"], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 64 && r.stderr.contains("usage:"), "\(r)")
    }

    @Test func watchSeesAnEditMadeByAnotherProcess() throws {
        let home = TestHome()
        home.initVault()
        var env = home.environment
        env["COFFER_PASSPHRASE"] = home.passphrase
        #expect(Spawn.run(ExampleBinary.path, ["demo"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path).status == 0)

        let out = home.path("watch.out"), err = home.path("watch.err")
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: ExampleBinary.path)
        watcher.arguments = ["watch", "example/api-key", "--count", "1"]
        watcher.environment = env
        watcher.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        watcher.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        watcher.standardInput = FileHandle.nullDevice
        try watcher.run()
        defer { if watcher.isRunning { watcher.terminate() } }
        func output() -> String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }
        let deadline = Date().addingTimeInterval(30)
        while !output().contains("watching for changes") && watcher.isRunning && Date() < deadline { usleep(20_000) }
        #expect(output().contains("example/api-key: ex-0… (23 characters); watching for changes"), "\(output())")

        #expect(home.unlocked(["edit", "example/api-key", "--field", "key=ex-ZYXWVUTSRQPONMLKJIHGFEDCBA"]).status == 0)
        while watcher.isRunning && Date() < deadline { usleep(20_000) }
        #expect(!watcher.isRunning, "the watcher saw the change and stopped")
        watcher.waitUntilExit()
        #expect(watcher.terminationStatus == 0, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
        #expect(output().contains("example/api-key changed: ex-Z… (29 characters)"), "\(output())")
    }
}
