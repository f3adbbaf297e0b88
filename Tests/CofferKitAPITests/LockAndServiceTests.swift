import CofferKit
import CofferTestSupport
import Foundation
import Testing

/// Reads `changes` until it ends, at most `seconds`: what it yielded, and
/// whether it ended (false: the time ran out first).
func drain(_ changes: AsyncStream<VaultChange>, within seconds: Double) async -> (changes: [VaultChange], ended: Bool) {
    await withTaskGroup(of: ([VaultChange], Bool)?.self) { group in
        group.addTask {
            var seen: [VaultChange] = []
            for await change in changes { seen.append(change) }
            return (seen, true)
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first ?? ([], false)
    }
}

/// A shell session of the vault of `coffer` in this process's session
/// folder (the one `Coffer.Unlock.session` looks in), as `coffer unlock`
/// starts one.
func startSession(_ coffer: Coffer) throws(CofferError) -> String {
    try Session.start(vault: coffer.vault, idleTimeout: 900, maxLifetime: 3600, directory: .resolve()).token
}

@Suite("Coffer front door: lock")
struct LockTests {
    @Test func lockWipesTheKeysAndEveryLaterCallThrowsLocked() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("sk-test-0123456789abcdef", for: "work/openai")
        #expect(!c.isLocked)
        let changes = c.changes(every: .milliseconds(20))
        await c.lock()
        #expect(c.isLocked && c.vault.isLocked)
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))

        await expectError(.locked) { () async throws(CofferError) in try await c.string(for: "work/openai") }
        await expectError(.locked) { () async throws(CofferError) in try await c.item(named: "work/openai") }
        await expectError(.locked) { () async throws(CofferError) in try await c.items() }
        await expectError(.locked) { () async throws(CofferError) in try await c.set("other-value-0123456789", for: "work/openai") }
        await expectError(.locked) { () async throws(CofferError) in try await c.remove("work/openai") }
        await expectError(.locked) { () async throws(CofferError) in try await c.string(forSource: "openai") }
        await expectError(.locked) { () async throws(CofferError) in try await c.export(to: box.path("b.bundle")) }
        // The lower-level vault is locked too: a write is refused before it
        // touches the file, a read fails at its first decryption.
        await expectError(.locked) { () async throws(CofferError) in try c.vault.item(named: "work/openai") }
        await expectError(.locked) { () async throws(CofferError) in try c.vault.delete("work/openai") }
        do {
            _ = try await c.string(for: "work/openai")
        } catch {
            #expect(error.message.contains("locked") && error.hint != nil)
            #expect(!error.message.contains("coffer ") && !(error.hint ?? "").contains("coffer "), "no command in the words: \(error)")
        }
        await c.lock() // twice: nothing more happens
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "nothing was written")

        // The change stream says so once and ends.
        let (seen, ended) = await drain(changes, within: 60)
        #expect(ended, "the stream ends after the locked change")
        #expect(seen.last?.locked == true && seen.last?.items == [])
        #expect(seen.filter(\.locked).count == 1)
        // A stream made on a locked Coffer starts and ends that way.
        let late = await drain(c.changes(every: .milliseconds(20)), within: 60)
        #expect(late.ended && late.changes.map(\.locked) == [true])

        // The vault itself is not locked: another unlock reads it.
        let again = try await Coffer.open(at: box.vaultPath, passphrase: Sandbox.passphrase)
        #expect(try await again.string(for: "work/openai") == "sk-test-0123456789abcdef")
    }

    @Test func callsInFlightFinishAndNoWriteStraddlesTheLock() async throws {
        let box = Sandbox()
        let c = try await box.create()
        // Many writes racing one lock: each either commits whole (and
        // reads back under the real key) or throws .locked.
        let outcomes = await withTaskGroup(of: Bool?.self) { group -> [Bool?] in
            for i in 0..<24 {
                group.addTask { () async -> Bool? in
                    do throws(CofferError) {
                        try await c.set("value-\(i)-0123456789abcdef", for: "race/\(i)", kind: .note)
                        return true
                    } catch {
                        return error.kind == .locked ? false : nil
                    }
                }
            }
            group.addTask { () async -> Bool? in
                await c.lock()
                return false
            }
            var all: [Bool?] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(!outcomes.contains(nil), "every call either succeeded or threw .locked")
        let reopened = try await Coffer.open(at: box.vaultPath, passphrase: Sandbox.passphrase)
        let stored = try await reopened.items(matching: "race/*")
        for summary in stored {
            let i = summary.name.dropFirst("race/".count)
            #expect(try await reopened.string(for: summary.name) == "value-\(i)-0123456789abcdef")
        }
        #expect(try reopened.vault.verify().problems.isEmpty)
    }

    @Test func aSessionCofferLocksWhenTheSessionIsLocked() async throws {
        let box = Sandbox()
        let created = try await box.create()
        try await created.set("sk-test-0123456789abcdef", for: "work/openai")
        let token = try startSession(created)
        let c = try await Coffer.open(.session(token: token), at: box.vaultPath)
        #expect(try await c.string(for: "work/openai") == "sk-test-0123456789abcdef")
        let changes = c.changes(every: .milliseconds(20))

        // What the user types in a shell: `coffer lock` with the session's token.
        let lock = try CofferCLI.run(["lock"], env: ["COFFER_SESSION": token])
        #expect(lock.status == 0, "\(lock)")

        let (seen, ended) = await drain(changes, within: 60)
        #expect(ended && seen.last?.locked == true, "\(seen)")
        #expect(c.isLocked)
        do {
            _ = try await c.string(for: "work/openai")
            Issue.record("a Coffer whose session ended still serves secrets")
        } catch {
            #expect(error.kind == .locked)
            #expect(error.message.contains("session ended"), "\(error)")
        }
        // The passphrase-opened Coffer of the same file is not affected.
        #expect(try await created.string(for: "work/openai") == "sk-test-0123456789abcdef")
        // Nor is opening again: the session is gone, so that is .locked too.
        await expectError(.locked) { () async throws(CofferError) in try await Coffer.open(.session(token: token), at: box.vaultPath) }
    }

    @Test func aSessionCofferNoticesItsSessionExpiredAtTheNextCall() async throws {
        let box = Sandbox()
        let created = try await box.create()
        try await created.set("a-note", for: "n", kind: .note)
        let token = try startSession(created)
        defer { _ = try? Session.end(token: token, directory: .resolve()) }
        let c = try await Coffer.open(.session(token: token), at: box.vaultPath)
        #expect(try await c.string(for: "n") == "a-note")
        // Unused for an hour, as far as the session's idle timer (its
        // file's modification time) can tell: no sleeping, no race.
        let file = SessionDirectory.resolve().path + "/" + token.dropFirst(4).prefix(32) + ".session"
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file)
        do {
            _ = try await c.string(for: "n")
            Issue.record("an expired session's Coffer still serves secrets")
        } catch {
            #expect(error.kind == .locked && error.message.contains("expired"), "\(error)")
        }
        #expect(c.isLocked)
        // The expired session's file is wiped, as any session user does.
        #expect(throws: CofferError.self) { try Session.check(file: VaultFile.open(path: box.vaultPath), token: token, directory: .resolve()).get() }
    }
}

@Suite("Coffer front door: services")
struct ServiceTests {
    @Test func aServiceKeepsItsItemsInItsFolderWithRelativeNames() async throws {
        let box = Sandbox()
        let whole = try await box.create()
        try await whole.set("outside-0123456789", for: "work/token", kind: .note)
        let app = try await Coffer.open(service: "com.example.app", .file(try box.passphraseFile()), at: box.vaultPath)
        #expect(app.service == "com.example.app" && whole.service == nil)

        try await app.set("app-secret-0123456789", for: "token", kind: .note)
        try await app.set("hunter2", for: "accounts/ada", kind: .login(username: "ada"))
        // Where it lives, for everyone else.
        #expect(try await whole.string(for: "apps/com.example.app/token") == "app-secret-0123456789")
        #expect(try await whole.string(for: "token") == nil)
        // Relative for the app, which sees nothing outside its folder.
        #expect(try await app.string(for: "token") == "app-secret-0123456789")
        #expect(try await app.item(named: "accounts/ada")?.name == "accounts/ada")
        #expect(try await app.items().map(\.name) == ["accounts/ada", "token"])
        #expect(try await app.items(matching: "acc*").map(\.name) == ["accounts/ada"])
        #expect(try await app.string(for: "work/token") == nil)
        #expect(try await app.remove("work/token") == false)
        #expect(try await whole.string(for: "work/token") == "outside-0123456789", "untouched")

        // An id reaches only the folder's items.
        let outsideID = try #require(try await whole.item(named: "work/token")).id
        let insideID = try #require(try await whole.item(named: "apps/com.example.app/token")).id
        #expect(try await app.item(named: "id:" + outsideID.hex) == nil)
        #expect(try await app.remove("id:" + outsideID.hex) == false)
        #expect(try await app.item(named: "id:" + insideID.hex)?.name == "token")

        // Another service does not see it; a view made from any Coffer does.
        let other = try whole.scoped(toService: "org.other.tool")
        #expect(try await other.items().isEmpty)
        let same = try whole.scoped(toService: "com.example.app")
        #expect(try await same.string(for: "token") == "app-secret-0123456789")

        #expect(try await app.remove("token"))
        #expect(try await whole.string(for: "apps/com.example.app/token") == nil)

        // By source, too, only the folder's items.
        try await whole.set("sk-test-0123456789abcdef", for: "shared/openai", kind: .apiKey, source: "openai")
        #expect(try await app.candidates(for: "openai").isEmpty)
        try await app.set("sk-test-abcdef0123456789", for: "openai", kind: .apiKey, source: "openai")
        #expect(try await app.candidates(for: "openai").map(\.name) == ["openai"])
        #expect(try await app.string(forSource: "openai") == "sk-test-abcdef0123456789")
    }

    @Test func badServiceNamesAreRefused() async throws {
        let box = Sandbox()
        let c = try await box.create()
        for bad in ["", "a/b", "..", ".", "tab\there", "/lead"] {
            await expectError(.usage) { () async throws(CofferError) in try c.scoped(toService: bad) }
        }
        await expectError(.usage) { () async throws(CofferError) in
            try await Coffer.open(service: "x/y", .file(try! box.passphraseFile()), at: box.vaultPath)
        }
        let app = try c.scoped(toService: "com.example.app")
        await expectError(.usage) { () async throws(CofferError) in try await app.set("v", for: "", kind: .note) }
        await expectError(.usage) { () async throws(CofferError) in try await app.set("v", for: "a//b", kind: .note) }
    }

    @Test func aServiceSharesTheLockAndSeesOnlyItsChanges() async throws {
        let box = Sandbox()
        let whole = try await box.create()
        let app = try whole.scoped(toService: "com.example.app")
        let changes = app.changes(every: .milliseconds(20))
        async let seen = firstChange(changes, within: 60) { !$0.items.isEmpty }
        try await whole.set("elsewhere", for: "work/x", kind: .note)
        try await app.set("mine-0123456789", for: "token", kind: .note)
        #expect(await seen?.items == ["token"], "relative, and nothing outside the folder")

        let stream = app.changes(every: .milliseconds(20))
        await app.lock()
        #expect(whole.isLocked, "one vault, one lock")
        await expectError(.locked) { () async throws(CofferError) in try await whole.string(for: "work/x") }
        let (rest, ended) = await drain(stream, within: 60)
        #expect(ended && rest.last?.locked == true)
    }
}

@Suite("Coffer front door: an API key and its server URL")
struct ServerURLTests {
    @Test func keyAndURLRoundTripInOneItem() async throws {
        let box = Sandbox()
        let c = try await box.create()
        let app = try c.scoped(toService: "ai.prsnl")
        #expect(try await app.credential(for: "api") == nil)
        let warnings = try await app.set("prsnl-0123456789abcdef", for: "api", url: "https://prsnl.example.org:8443/")
        #expect(warnings.isEmpty, "\(warnings)")
        let got = try #require(try await app.credential(for: "api"))
        #expect(got.value == "prsnl-0123456789abcdef" && got.url == "https://prsnl.example.org:8443/")
        let item = try #require(try await c.item(named: "apps/ai.prsnl/api"))
        #expect(item.type == .apiKey)
        #expect(item.field("key")?.isSecret == true && item.field("url")?.isSecret == false)
        #expect(try await app.string(for: "api") == "prsnl-0123456789abcdef")

        // A new key and URL replace both in one write; other fields stay.
        _ = try c.vault.edit(
            "apps/ai.prsnl/api",
            {
                var e = ItemEdit()
                e.setFields = [Field(name: "user_id", value: "42", isSecret: false)]
                return e
            }())
        try await app.set("prsnl-fedcba9876543210", for: "api", url: "http://localhost:8000")
        let updated = try #require(try await app.item(named: "api"))
        #expect(updated.field("key")?.value == "prsnl-fedcba9876543210")
        #expect(updated.field("url")?.value == "http://localhost:8000")
        #expect(updated.field("user_id")?.value == "42")

        // Any item: its value, and its url when it has one.
        try await app.set("hunter2", for: "login", kind: .login(username: "ada", url: "https://example.org"))
        #expect(try await app.credential(for: "login").map { [$0.value, $0.url] } == ["hunter2", "https://example.org"])
        try await app.set("only-a-key-0123456789", for: "bare", kind: .apiKey)
        #expect(try await app.credential(for: "bare").map { [$0.value, $0.url] } == ["only-a-key-0123456789", nil])
    }

    @Test func aURLThatIsNotAServersIsRefusedWithoutRepeatingIt() async throws {
        let box = Sandbox()
        let c = try await box.create()
        for bad in ["", "prsnl.example.org", "ftp://example.org", "https://", "https://user:s3cr3t pass@host", "javascript:alert(1)"] {
            do {
                try await c.set("key-0123456789abcdef", for: "api", url: bad)
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(error.kind == .usage)
                #expect(bad.isEmpty || !error.message.contains(bad), "the URL is not repeated")
            }
        }
        #expect(try await c.item(named: "api") == nil, "nothing stored")
        await expectError(.usage) { () async throws(CofferError) in try await c.set("", for: "api", url: "https://example.org") }
    }
}
