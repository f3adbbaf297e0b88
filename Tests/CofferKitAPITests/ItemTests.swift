import CofferKit
import Foundation
import Testing

@Suite("Coffer front door: items")
struct ItemTests {
    @Test func everyKindStoresWhatItSays() async throws {
        let box = Sandbox()
        let c = try await box.create()
        #expect(try await c.set("sk-proj-" + String(repeating: "a", count: 60), for: "work/openai", kind: .apiKey, source: "openai").isEmpty)
        try await c.set("hunter2", for: "work/github", kind: .login(username: "me", url: "https://github.com"))
        try await c.set("line one\nline two", for: "notes/door", kind: .note)
        try await c.set("s3cr3t", for: "misc/thing", kind: .generic(fields: ["region": "eu", "api_token": "tok"]))

        let key = try #require(try await c.item(named: "work/openai"))
        #expect(key.type == .apiKey && key.source == "openai" && key.field("key")?.isSecret == true)
        let login = try #require(try await c.item(named: "work/github"))
        #expect(login.type == .login)
        #expect(login.field("username") == Field(name: "username", value: "me", isSecret: false))
        #expect(login.field("password") == Field(name: "password", value: "hunter2", isSecret: true))
        #expect(login.field("url")?.value == "https://github.com")
        #expect(try await c.string(for: "work/github") == "hunter2")
        #expect(try await c.string(for: "work/github", field: "username") == "me")
        #expect(try await c.string(for: "notes/door") == "line one\nline two")
        let generic = try #require(try await c.item(named: "misc/thing"))
        #expect(generic.type == .custom)
        #expect(generic.field("value") == Field(name: "value", value: "s3cr3t", isSecret: true))
        #expect(generic.field("region") == Field(name: "region", value: "eu", isSecret: false))
        #expect(generic.field("api_token")?.isSecret == true)
        #expect(try await c.string(for: "misc/thing") == "s3cr3t")

        // Missing things are nil, not errors.
        #expect(try await c.item(named: "nope") == nil)
        #expect(try await c.string(for: "nope") == nil)
        #expect(try await c.string(for: "work/github", field: "otp") == nil)
    }

    @Test func setUpdatesInOneWriteAndKeepsOtherFields() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("old-password", for: "site", kind: .login(username: "me", url: "https://a.example"))
        var edit = ItemEdit()
        edit.setFields = [Field(name: "otp", value: "JBSWY3DPEHPK3PXP", isSecret: true)]
        try c.vault.edit("site", edit)
        try await c.set("new-password", for: "site", kind: .login(username: "me"), expires: Day("2999-01-01"))
        let item = try #require(try await c.item(named: "site"))
        #expect(item.field("password")?.value == "new-password")
        #expect(item.field("url")?.value == "https://a.example", "a url not given is kept")
        #expect(item.field("otp") != nil, "fields the kind does not mention are kept")
        #expect(item.expires == Day("2999-01-01"))
        // Every set is one version on top of the last: the history has both.
        let history = try c.vault.history("site").filter { $0.field == "password" }
        #expect(history.map(\.value) == ["old-password", "new-password"])
        // A set that changes the kind changes the type.
        try await c.set("sk-0123456789abcdef", for: "site", kind: .apiKey)
        #expect(try await c.item(named: "site")?.type == .apiKey)
        #expect(try await c.items().count == 1)
    }

    @Test func badInputIsRefusedAndChangesNothing() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("value-1", for: "keep", kind: .note)
        let before = try await c.items()
        await expectError(.usage) { () async throws(CofferError) in try await c.set("", for: "x") }
        await expectError(.usage) { () async throws(CofferError) in try await c.set("v", for: "/bad/") }
        await expectError(.usage) { () async throws(CofferError) in try await c.set("v", for: "") }
        await expectError(.usage) { () async throws(CofferError) in try await c.set("v", for: "a\u{7}b") }
        await expectError(.usage) { () async throws(CofferError) in try await c.set("v", for: "x", source: "") }
        await expectError(.usage) { () async throws(CofferError) in try await c.set("v", for: "x", kind: .generic(fields: ["@bad": "1"])) }

        // A registered manifest's rule refuses a value that fails it.
        let manifest = #"{"version": 1, "sources": [{"id": "ads", "name": "ADS", "type": "api-key", "required": true, "format": {"minLength": 20}}]}"#
        _ = try c.vault.registerRequirements(Data(manifest.utf8), name: "app", file: "app.json")
        await expectError(.invalidCredential) { () async throws(CofferError) in try await c.set("short", for: "ads-key", source: "ads") }
        #expect(try await c.items() == before, "nothing was stored")
        #expect(try await c.string(for: "keep") == "value-1")
        try await c.set(String(repeating: "k", count: 24), for: "ads-key", source: "ads")
    }

    @Test func removeAndListing() async throws {
        let box = Sandbox()
        let c = try await box.create()
        for name in ["work/openai", "work/Anthropic", "home/router", "home/wifi"] {
            try await c.set("value-for-\(name)", for: name, kind: .note)
        }
        #expect(try await c.items().map(\.name) == ["home/router", "home/wifi", "work/Anthropic", "work/openai"])
        #expect(try await c.items(matching: "work/*").map(\.name) == ["work/Anthropic", "work/openai"])
        #expect(try await c.items(matching: "*/anthropic").map(\.name) == ["work/Anthropic"], "case does not matter")
        #expect(try await c.items(matching: "ROUT").map(\.name) == ["home/router"], "no wildcard: contains")
        #expect(try await c.items(matching: "home/wif?").map(\.name) == ["home/wifi"])
        #expect(try await c.items(matching: "nothing*").isEmpty)
        #expect(try await c.items(matching: "").count == 4)

        #expect(try await c.remove("home/wifi"))
        #expect(try await c.remove("home/wifi") == false)
        #expect(try await c.item(named: "home/wifi") == nil)
        #expect(try await c.items().count == 3)
        // The name is free again.
        try await c.set("again", for: "home/wifi", kind: .note)
        #expect(try await c.string(for: "home/wifi") == "again")
    }
}

@Suite("Coffer front door: credentials by source")
struct SourceTests {
    @Test func typedWarnings() async throws {
        let box = Sandbox()
        let c = try await box.create()
        let w = try await c.set(" sk-proj-" + String(repeating: "a", count: 60), for: "k1", source: "openai")
        #expect(w.map(\.kind) == [.surroundingWhitespace])
        #expect(w[0].field == "key" && !w[0].message.contains("aaaa"), "no secret in a warning")
        let other = try await c.set("sk-ant-api03-" + String(repeating: "b", count: 90), for: "k2", source: "openai")
        #expect(other.map(\.kind).contains(.otherProvider))
        #expect(other.map(\.kind).contains(.ambiguousSource), "two items now hold a key for openai")
        let expired = try await c.set("plain-value-123", for: "old", expires: Day("2001-01-01"))
        #expect(expired.map(\.kind) == [.expired])
        // Notes and passphrase-style passwords are not keys: spaces and
        // line breaks are normal there.
        #expect(try await c.set("the door code is 4711\nthe alarm 0815", for: "home/note", kind: .note).isEmpty)
        #expect(try await c.set("correct horse battery staple", for: "home/login", kind: .login(username: "me")).isEmpty)
        #expect(try await c.set("sk-proj-" + String(repeating: "c", count: 60), for: "misc/x", kind: .generic()).isEmpty)
    }

    @Test func candidatesAreOrderedTheDocumentedWay() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("key-older-0000000000", for: "a/older", source: "svc")
        try await Task.sleep(for: .milliseconds(5))
        try await c.set("key-newer-0000000000", for: "b/newer", source: "svc")
        try await Task.sleep(for: .milliseconds(5))
        try await c.set("key-expired-00000000", for: "c/newest-but-expired", source: "svc", expires: Day("2001-01-01"))
        try await c.set("hunter2", for: "d/login", kind: .login(username: "u"), source: "svc")

        // Not expired first, then most recently updated; the login holds
        // no key so it is no candidate for a key.
        let keys = try await c.candidates(for: "svc").map(\.name)
        #expect(keys == ["b/newer", "a/older", "c/newest-but-expired"])
        #expect(try await c.string(forSource: "svc") == "key-newer-0000000000")
        #expect(try await c.string(forSource: "svc", type: .login) == "hunter2")
        #expect(try await c.string(forSource: "nothing") == nil)

        // Updating the older item makes it the newest.
        try await Task.sleep(for: .milliseconds(5))
        try await c.set("key-older-1111111111", for: "a/older")
        #expect(try await c.candidates(for: "svc").map(\.name) == ["a/older", "b/newer", "c/newest-but-expired"])

        // The same choice as CredentialManager and coffer check.
        let manager = CredentialManager(vault: c.vault)
        #expect(try await manager.retrieve(for: "svc", type: .apiKey) == "key-older-1111111111")
    }
}
