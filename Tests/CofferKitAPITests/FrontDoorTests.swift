import CofferKit
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Coffer front door: opening and creating")
struct OpeningTests {
    @Test func createThenOpenWithEveryPassphraseForm() async throws {
        let box = Sandbox()
        let created = try await box.create()
        #expect(created.path == box.vaultPath)
        try await created.set("sk-test-0123456789abcdef", for: "svc")
        #expect(Coffer.exists(at: box.vaultPath))
        // The file is private to the user.
        let mode = try FileManager.default.attributesOfItem(atPath: box.vaultPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let byString = try await Coffer.open(at: box.vaultPath, passphrase: Sandbox.passphrase)
        #expect(try await byString.string(for: "svc") == "sk-test-0123456789abcdef")
        let byBytes = try await Coffer.open(at: box.vaultPath, passphrase: Array(Sandbox.passphrase.utf8))
        #expect(try await byBytes.string(for: "svc") == "sk-test-0123456789abcdef")
        let byData = try await Coffer.open(at: box.vaultPath, passphrase: Data(Sandbox.passphrase.utf8))
        #expect(try await byData.string(for: "svc") == "sk-test-0123456789abcdef")
        let bySecret = try await Coffer.open(at: box.vaultPath, passphrase: SecretBytes(copying: Array(Sandbox.passphrase.utf8)))
        #expect(try await bySecret.string(for: "svc") == "sk-test-0123456789abcdef")
    }

    @Test func badOpensAndCreatesSayWhatIsWrongAndChangeNothing() async throws {
        let box = Sandbox()
        await expectError(.vaultNotFound) { () async throws(CofferError) in try await Coffer.open(at: box.vaultPath, passphrase: "x") }
        #expect(!Coffer.exists(at: box.vaultPath))
        await expectError(.usage) { () async throws(CofferError) in
            try await Coffer.create(at: box.vaultPath, passphrase: "", kdf: FastKDF.parameters)
        }
        await expectError(.usage) { () async throws(CofferError) in
            try await Coffer.create(at: box.vaultPath, passphrase: "pw", kdf: KDFParameters(memoryKiB: 8, iterations: 0, parallelism: 1))
        }
        #expect(!Coffer.exists(at: box.vaultPath), "no file left behind")

        _ = try await box.create()
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        await expectError(.vaultExists) { () async throws(CofferError) in try await box.create() }
        await expectError(.wrongPassphrase) { () async throws(CofferError) in
            try await Coffer.open(at: box.vaultPath, passphrase: "wrong")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "the vault is unchanged")

        // A folder, or a file that is not a vault.
        try Data("not a vault".utf8).write(to: URL(fileURLWithPath: box.path("junk")))
        await expectError(.badData) { () async throws(CofferError) in try await Coffer.open(at: box.path("junk"), passphrase: "x") }
        await expectError(.badData) { () async throws(CofferError) in try await Coffer.open(at: box.root.path, passphrase: "x") }
    }

    @Test func unlockSourcesFileDescriptorFileEnvironmentAndFallbacks() async throws {
        let box = Sandbox()
        _ = try await box.create()
        let file = try box.passphraseFile()
        let fromFile = try await Coffer.open(.file(file), at: box.vaultPath)
        #expect(fromFile.path == box.vaultPath)
        await expectError(.fileNotFound) { () async throws(CofferError) in try await Coffer.open(.file(box.path("missing")), at: box.vaultPath) }

        // A pipe: the passphrase less its newline.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let line = Array((Sandbox.passphrase + "\n").utf8)
        #expect(write(fds[1], line, line.count) == line.count)
        close(fds[1])
        _ = try await Coffer.open(.automatic(passphraseFD: fds[0]), at: box.vaultPath)
        close(fds[0])
        await expectError(.usage) { () async throws(CofferError) in try await Coffer.open(.fileDescriptor(9999), at: box.vaultPath) }

        // An environment variable (a name only this test uses).
        let name = "COFFER_API_TEST_\(UInt32.random(in: 0...UInt32.max))"
        setenv(name, Sandbox.passphrase, 1)
        defer { unsetenv(name) }
        _ = try await Coffer.open(.environment(name), at: box.vaultPath)
        // Unset sources are skipped; when none is left the error says so.
        await expectError(.locked) { () async throws(CofferError) in
            try await Coffer.open(.environment(name + "_UNSET"), at: box.vaultPath)
        }
        _ = try await Coffer.open(.environment(name + "_UNSET").then(.file(file)), at: box.vaultPath)
        // A wrong passphrase from a later source is still an error.
        setenv(name, "wrong", 1)
        await expectError(.wrongPassphrase) { () async throws(CofferError) in try await Coffer.open(.environment(name), at: box.vaultPath) }
    }

    @Test func reusesTheShellSessionOfTheCommandLine() async throws {
        let box = Sandbox()
        let coffer = try await box.create()
        try await coffer.set("session-value", for: "s", kind: .note)
        let file = try box.passphraseFile()
        let unlock = try CofferCLI.run(["unlock", "--vault", box.vaultPath, "--passphrase-file", file, "--shell", "sh"])
        #expect(unlock.status == 0, "\(unlock.stderr)")
        guard let range = unlock.stdout.range(of: #"cs1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}"#, options: .regularExpression) else {
            Issue.record("no token in: \(unlock.stdout)")
            return
        }
        let token = String(unlock.stdout[range])
        let viaSession = try await Coffer.open(.session(token: token), at: box.vaultPath)
        #expect(try await viaSession.string(for: "s") == "session-value")

        // A token of another vault, and a locked session, are refused.
        let other = Sandbox()
        _ = try await other.create()
        await expectError(.locked) { () async throws(CofferError) in try await Coffer.open(.session(token: token), at: other.vaultPath) }
        #expect(try CofferCLI.run(["lock", "--vault", box.vaultPath], env: ["COFFER_SESSION": token]).status == 0)
        await expectError(.locked) { () async throws(CofferError) in try await Coffer.open(.session(token: token), at: box.vaultPath) }
        await expectError(.locked) { () async throws(CofferError) in try await Coffer.open(.session(token: "garbage"), at: box.vaultPath) }
    }

    @Test func hardeningIsAnExplicitCall() {
        #expect(Coffer.hardenProcess())
        var limit = rlimit()
        #if canImport(Glibc)
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #endif
        #expect(limit.rlim_cur == 0)
    }
}

@Suite("Coffer front door: no secret shown")
struct RedactionTests {
    @Test func anUnlockNeverShowsItsSessionToken() {
        let token = "cs1." + String(repeating: "a", count: 32) + "." + String(repeating: "B", count: 43)
        let unlock = Coffer.Unlock.session(token: token).then(.automatic)
        var dumped = ""
        dump(unlock, to: &dumped)
        for text in [unlock.description, unlock.debugDescription, String(describing: unlock), String(reflecting: unlock), dumped, "\(unlock)"] {
            #expect(!text.contains("BBBB"), "\(text)")
        }
        #expect(unlock.description == "session(token: …) → session($COFFER_SESSION) → environment($COFFER_PASSPHRASE) → terminal")
    }
}

@Suite("Coffer front door: the remaining calls")
struct RemainingCallsTests {
    @Test func createFromBytesAndGuardedMemoryAndWrapAVault() async throws {
        let box = Sandbox()
        let fromBytes = try await Coffer.create(at: box.path("a.coffer"), passphrase: Data("bytes pass".utf8), kdf: FastKDF.parameters)
        let fromSecret = try await Coffer.create(at: box.path("b.coffer"), passphrase: SecretBytes(copying: Array("secret pass".utf8)), kdf: FastKDF.parameters)
        try await fromBytes.set("one", for: "x", kind: .note)
        try await fromSecret.set("two", for: "x", kind: .note)
        #expect(try await Coffer.open(at: box.path("a.coffer"), passphrase: "bytes pass").string(for: "x") == "one")
        #expect(try await Coffer.open(at: box.path("b.coffer"), passphrase: Array("secret pass".utf8)).string(for: "x") == "two")

        // Another Coffer, and a CredentialManager, over the same vault.
        let wrapped = Coffer(vault: fromBytes.vault)
        #expect(try await wrapped.string(for: "x") == "one")
        let manager = CredentialManager(coffer: fromBytes, namePrefix: "apps/demo/")
        try await manager.store(apiKey: "k-0123456789abcdef", for: "svc")
        #expect(try await fromBytes.string(forSource: "svc") == "k-0123456789abcdef")
        #expect(try await fromBytes.items(matching: "apps/demo/*").map(\.name) == ["apps/demo/svc/api-key"])
    }

    @Test func defaultPathFollowsTheEnvironment() {
        let env = ProcessInfo.processInfo.environment
        if let v = env["COFFER_VAULT"], v.hasPrefix("/") {
            #expect(Coffer.defaultPath == v)
        } else if let d = env["XDG_DATA_HOME"], d.hasPrefix("/") {
            #expect(Coffer.defaultPath == d + "/coffer/vault.coffer")
        } else {
            #expect(Coffer.defaultPath.hasSuffix("/.local/share/coffer/vault.coffer"))
        }
        #expect(Coffer.exists(at: "/nonexistent/coffer/vault.coffer") == false)
    }

    @Test func automaticWithAFileAndSessionOnlyWithoutOne() async throws {
        let box = Sandbox()
        _ = try await box.create()
        let file = try box.passphraseFile()
        #expect(try await Coffer.open(.automatic(passphraseFile: file), at: box.vaultPath).path == box.vaultPath)
        if ProcessInfo.processInfo.environment["COFFER_SESSION"] == nil {
            // `.session` alone with no session set: nothing to unlock with.
            await expectError(.locked) { () async throws(CofferError) in try await Coffer.open(.session, at: box.vaultPath) }
        }
    }

    @Test func deltaExportCarriesOnlyWhatTheReceiverLacks() async throws {
        let box = Sandbox()
        let a = try await box.create()
        for i in 0..<5 { try await a.set("v\(i)", for: "i\(i)", kind: .note) }
        let full = try await a.export(to: box.path("full.cb"))
        #expect(full.kind == .full && full.items == 5)
        let seen = try Vault.inspectBundle(at: box.path("full.cb")).header.summary
        try await a.set("changed", for: "i3", kind: .note)
        let delta = try await a.export(to: box.path("delta.cb"), since: seen)
        #expect(delta.kind == .delta && delta.items == 1)
    }
}
