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
        let r = Spawn.run(
            ExampleBinary.path, ["demo", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase, environment: home.environment, workDir: home.root.path)
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

        let out = home.path("watch.out")
        let err = home.path("watch.err")
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

    @Test func serviceKeepsAKeyAndItsURLInTheAppsFolderThenLocks() {
        let home = TestHome()
        home.initVault()
        let r = Spawn.run(
            ExampleBinary.path, ["service", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("api: ex-s… (26 characters) for https://api.example.org"), "\(r)")
        #expect(r.stdout.contains("items of com.example.keychain-app: api"), "\(r)")
        #expect(r.stdout.contains("after lock: refused (locked)"), "\(r)")
        // An ordinary item in the app's folder, for the command line.
        #expect(home.unlocked(["get", "apps/com.example.keychain-app/api"]).out == "ex-server-0123456789abcdef")
        #expect(home.unlocked(["get", "apps/com.example.keychain-app/api", "--field", "url"]).out == "https://api.example.org")
    }

    @Test func aWatcherOpenedThroughTheSessionStopsWhenTheSessionIsLocked() throws {
        let home = TestHome()
        home.initVault()
        var env = home.environment
        env["COFFER_PASSPHRASE"] = home.passphrase
        #expect(Spawn.run(ExampleBinary.path, ["demo"], stdin: nil, fd3: nil, environment: env, workDir: home.root.path).status == 0)
        let unlock = home.unlocked(["unlock", "--shell", "sh"])
        guard let range = unlock.stdout.range(of: #"cs1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}"#, options: .regularExpression) else {
            Issue.record("no session token: \(unlock)")
            return
        }
        var session = home.environment
        session["COFFER_SESSION"] = String(unlock.stdout[range])
        guard let watcher = Spawn.start(ExampleBinary.path, ["watch", "example/api-key"], environment: session, workDir: home.root.path, ownProcessGroup: true)
        else {
            Issue.record("cannot start the watcher")
            return
        }
        let deadline = Date().addingTimeInterval(30)
        while !(watcher.stdoutText ?? "").contains("watching for changes") && Date() < deadline { usleep(20_000) }
        #expect((watcher.stdoutText ?? "").contains("watching for changes"), "\(watcher.stderrText ?? "")")

        // The user locks the shell's session: the running app stops serving.
        #expect(home.run(["lock"], env: ["COFFER_SESSION": session["COFFER_SESSION"]!]).status == 0)
        let (status, timedOut) = watcher.wait(timeout: 30)
        #expect(!timedOut, "the watcher noticed the lock")
        #expect(status == 77, "\(watcher.stderrText ?? "")")
        #expect((watcher.stdoutText ?? "").contains("example/api-key: the vault was locked; stopping"))
    }

    /// The example is an application of its own: compiled outside the
    /// package (no package name, so nothing `package` is visible; only
    /// CofferKit's module on the search path) and linked against the
    /// package's build, then run. A few seconds: one file compiled, the
    /// package's objects reused.
    @Test(.enabled(if: ClientBuild.swiftc != nil && ClientBuild.linkList != nil))
    func theExampleBuildsAsAClientOfThePackageWithOnlyImportCofferKit() throws {
        let home = TestHome()
        let work = home.path("client")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let source = ClientBuild.packageRoot + "/Examples/KeychainApp/main.swift"
        let text = try String(contentsOfFile: source, encoding: .utf8)
        let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }.map(String.init)
        #expect(Set(imports) == ["import CofferKit", "import Foundation", "import Glibc"], "\(imports)")

        let swiftc = try #require(ClientBuild.swiftc)
        let linkList = try #require(ClientBuild.linkList)
        let objects = try String(contentsOfFile: linkList, encoding: .utf8).split(separator: "\n")
            .filter { !$0.contains("coffer_example.build") }.joined(separator: "\n")
        try objects.write(toFile: work + "/objects", atomically: true, encoding: .utf8)
        let compile = Spawn.timed(
            swiftc,
            ["-c", "-module-name", "ClientApp", "-I", ClientBuild.buildDir + "/Modules"] + ClientBuild.moduleMapFlags
                + [source, "-o", work + "/main.o"],
            environment: ProcessInfo.processInfo.environment, workDir: work, timeout: 300)
        #expect(compile.status == 0 && !compile.timedOut, "\(compile)")
        let link = Spawn.timed(
            swiftc, ["-lstdc++", "-L", ClientBuild.buildDir, "-o", work + "/client-app", work + "/main.o", "@" + work + "/objects"],
            environment: ProcessInfo.processInfo.environment, workDir: work, timeout: 300)
        #expect(link.status == 0 && !link.timedOut, "\(link)")
        guard link.status == 0 else { return }

        home.initVault()
        let r = Spawn.run(
            work + "/client-app", ["service", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase, environment: home.environment, workDir: home.root.path)
        #expect(r.status == 0 && r.stdout.contains("after lock: refused (locked)"), "\(r)")
        #expect(home.unlocked(["get", "apps/com.example.keychain-app/api", "--field", "url"]).out == "https://api.example.org")
    }
}

/// Where the package's build is, to build an application against it.
enum ClientBuild {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    /// The folder holding the built `coffer` (and Modules/, the objects).
    static let buildDir = URL(fileURLWithPath: CofferBinary.path).resolvingSymlinksInPath().deletingLastPathComponent().path
    /// The objects SwiftPM links `coffer-example` from.
    static let linkList: String? = {
        let p = buildDir + "/coffer-example.product/Objects.LinkFileList"
        return FileManager.default.fileExists(atPath: p) ? p : nil
    }()
    static let swiftc: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/swiftc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
    /// The C modules' maps SwiftPM passed when it built CofferKit (its
    /// lower layers import libsodium, Argon2, SQLite…), read from the
    /// build's manifest.
    static let moduleMapFlags: [String] = {
        let scratch = URL(fileURLWithPath: buildDir).deletingLastPathComponent().deletingLastPathComponent().path
        guard let manifest = try? String(contentsOfFile: scratch + "/debug.yaml", encoding: .utf8) else { return [] }
        var maps = Set<String>()
        for match in manifest.matches(of: /"-fmodule-map-file=([^"]+)"/) { maps.insert(String(match.1)) }
        return maps.sorted().flatMap { ["-Xcc", "-fmodule-map-file=" + $0] }
    }()
}
