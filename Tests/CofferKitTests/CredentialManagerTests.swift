import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

@Suite("CredentialManager")
struct CredentialManagerTests {
    static let adsKey = "abcdefghij0123456789XYZ"

    @Test func storeRetrieveDelete() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let m = CredentialManager(vault: vault)
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == nil)
        try await m.store(apiKey: Self.adsKey, for: "ads")
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == Self.adsKey)
        // The item is an ordinary one the CLI sees.
        let item = try vault.item(named: "ads/api-key")
        #expect(item.type == .apiKey && item.source == "ads" && item.field("key")?.isSecret == true)

        // Storing again replaces the value in the same item.
        try await m.store(apiKey: Self.adsKey + "2", for: "ads")
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == Self.adsKey + "2")
        #expect(try vault.list().count == 1)

        try await m.store(email: "me@example.org", for: "crossref")
        #expect(try await m.retrieve(for: "crossref", type: .email) == "me@example.org")
        try await m.store(apiKey: "k-123", email: "ops@example.org", for: "enterprise")
        #expect(try await m.retrieve(for: "enterprise", type: .apiKeyWithEmail) == "k-123")
        #expect(try await m.retrieve(for: "enterprise", type: .email) == "ops@example.org")

        #expect(try await m.delete(for: "ads", type: .apiKey) == 1)
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == nil)
        #expect(try await m.delete(for: "ads", type: .apiKey) == 0)
        #expect(try await m.retrieve(for: "crossref", type: .email) == "me@example.org")
    }

    @Test func validatesAgainstTheManifestAndTheEmailRule() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let m = CredentialManager(vault: vault, namePrefix: "apps/x/")
        let manifest = try parseManifest(exampleManifest)
        do {
            try await m.store(apiKey: "short", for: "ads", manifest: manifest)
            Issue.record("accepted a key that fails its rule")
        } catch {
            #expect(error.kind == .invalidCredential && error.exitCode == 65)
            #expect(!error.message.contains("short,") && error.message.contains("minimum 20"))
        }
        do {
            try await m.store(email: "not-an-email", for: "crossref")
            Issue.record("accepted a bad email")
        } catch {
            #expect(error.kind == .invalidCredential)
        }
        #expect(try vault.list().isEmpty, "nothing stored")
        let warnings = try await m.store(apiKey: " sk-proj-" + String(repeating: "a", count: 60), for: "openai")
        #expect(warnings.contains { $0.kind == .surroundingWhitespace && $0.message.contains("whitespace") })
        #expect(try vault.contains("apps/x/openai/api-key"))
    }

    @Test func availabilityFollowsTheManifest() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let m = CredentialManager(vault: vault)
        let manifest = try parseManifest(exampleManifest)
        let ads = try #require(manifest.source("ads"))
        #expect(try await !m.hasValidCredentials(for: ads))
        // Optional sources stay available (degraded); required ones without
        // a credential are unavailable.
        #expect(try await m.availableSources(in: manifest).map(\.id) == ["crossref"])
        #expect(try await m.unavailableSources(in: manifest).map(\.id) == ["ads"])
        try await m.store(apiKey: Self.adsKey, for: "ads")
        #expect(try await m.hasValidCredentials(for: ads))
        #expect(try await m.availableSources(in: manifest).map(\.id) == ["ads", "crossref"])
        #expect(try await m.unavailableSources(in: manifest).isEmpty)
        // An expired key is returned (as a fallback) but is not valid.
        var e = ItemEdit()
        e.expires = .some(Day.today.adding(days: -1))
        try vault.edit("ads/api-key", e)
        #expect(try await !m.hasValidCredentials(for: ads))
        let c = try await m.retrieveCredential(for: "ads", type: .apiKey)
        #expect(c?.value == Self.adsKey && c?.isExpired == true)
    }

    @Test func opensWithAPassphraseOrAMasterKey() async throws {
        let vaultBox = try TemporaryVault(passphrase: "open sesame")
        let vault = vaultBox.vault
        try vault.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "v1", isSecret: true)], source: "s"))
        let byPass = try CredentialManager.open(path: vault.path, passphrase: SecretBytes(copying: Array("open sesame".utf8)))
        #expect(try await byPass.retrieve(for: "s", type: .apiKey) == "v1")
        let byKey = try CredentialManager.open(path: vault.path, masterKey: vault.masterKey)
        #expect(try await byKey.retrieve(for: "s", type: .apiKey) == "v1")
        do {
            _ = try CredentialManager.open(path: vault.path, passphrase: SecretBytes(copying: Array("wrong".utf8)))
            Issue.record("wrong passphrase accepted")
        } catch {
            #expect(error.kind == .wrongPassphrase && error.exitCode == 77)
        }
        do {
            _ = try CredentialManager.open(path: vault.path + ".missing", passphrase: .environment("COFFER_TEST_UNSET_VARIABLE"))
            Issue.record("opened without a passphrase")
        } catch {
            #expect(error.kind == .locked)
        }
    }

    /// Many tasks reading and writing the same credentials at once: every
    /// read sees nil or a value some writer stored, nothing fails, and the
    /// final state is the last write.
    @Test func concurrentReadsAndWrites() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let m = CredentialManager(vault: vault)
        let writers = 40
        let readers = 200
        let written = Set((0..<writers).map { "key-\($0)-" + String(repeating: "x", count: 20) })
        try await withThrowingTaskGroup(of: String?.self) { group in
            for i in 0..<writers {
                group.addTask {
                    try await m.store(apiKey: "key-\(i)-" + String(repeating: "x", count: 20), for: i % 2 == 0 ? "even" : "odd")
                    return nil
                }
            }
            for i in 0..<readers {
                group.addTask { try await m.retrieve(for: i % 2 == 0 ? "even" : "odd", type: .apiKey) }
            }
            for try await value in group {
                if let value { #expect(written.contains(value), "read a value no one wrote") }
            }
        }
        // One item per source, holding a value some writer stored.
        let items = try vault.list()
        #expect(items.map(\.name) == ["even/api-key", "odd/api-key"])
        let even = try await m.retrieve(for: "even", type: .apiKey)
        #expect(even == (try vault.item(named: "even/api-key").field("key")?.value))
        #expect(written.contains(even ?? ""))
    }

    /// Concurrent reads of the same credential share one vault lookup.
    @Test func concurrentReadsAreCoalesced() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let m = CredentialManager(vault: vault)
        for i in 0..<30 {
            try await m.store(apiKey: "v\(i)", for: "s\(i)")
        }
        let n = 300
        let values = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<n { group.addTask { try await m.retrieve(for: "s7", type: .apiKey) } }
            var out: [String?] = []
            for try await v in group { out.append(v) }
            return out
        }
        #expect(values.count == n && values.allSatisfy { $0 == "v7" })
        let reads = await m.vaultReads
        #expect(reads >= 1 && reads < n, "\(reads) lookups for \(n) concurrent reads")
        // After a write, a new read does not reuse an older lookup.
        try await m.store(apiKey: "v7-new", for: "s7")
        #expect(try await m.retrieve(for: "s7", type: .apiKey) == "v7-new")
    }
}

/// `store` writes the item `retrieve` reads, whichever items compete.
@Suite("CredentialManager: store writes where retrieve reads")
struct CredentialStoreRetrieveTests {
    @Test func storeWritesTheItemRetrievePicks() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        // An older unexpired item and a newer expired one: lookups prefer
        // the unexpired one, so store must write there.
        try vault.add(ItemDraft(name: "ads/old", type: .apiKey, fields: [Field(name: "key", value: "old-key-0123456789abcdef", isSecret: true)], source: "ads"))
        try vault.add(
            ItemDraft(
                name: "ads/new", type: .apiKey, fields: [Field(name: "key", value: "new-key-0123456789abcdef", isSecret: true)], source: "ads",
                expires: Day.today.adding(days: -10)))
        let m = CredentialManager(vault: vault)
        let stored = "stored-key-0123456789abcdef"
        try await m.store(apiKey: stored, for: "ads")
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == stored)
        #expect(try vault.item(named: "ads/old").field("key")?.value == stored)
        #expect(try vault.item(named: "ads/new").field("key")?.value == "new-key-0123456789abcdef")
        let status = try vault.status(of: SourceRequirement(id: "ads", type: .apiKey))
        #expect(status.items == ["ads/old"])
        #expect(try vault.list().count == 2)
    }

    @Test func apiKeyWithEmailRetrieveReadsTheItemStoreWrote() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        try vault.add(ItemDraft(name: "ent/lone", type: .apiKey, fields: [Field(name: "key", value: "lone-key-0123456789", isSecret: true)], source: "ent"))
        let m = CredentialManager(vault: vault)
        try await m.store(apiKey: "pair-key-0123456789", email: "ops@example.org", for: "ent")
        #expect(try await m.retrieve(for: "ent", type: .apiKeyWithEmail) == "pair-key-0123456789")
        #expect(try await m.retrieve(for: "ent", type: .email) == "ops@example.org")
        let status = try vault.status(of: SourceRequirement(id: "ent", type: .apiKeyWithEmail))
        #expect(status.items == ["ent/api-key-with-email"])
    }
}
