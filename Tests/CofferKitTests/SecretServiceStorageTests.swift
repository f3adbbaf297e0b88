import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// The Secret Service's storage in the vault (docs/secret-service.md,
/// "What is stored where").
@Suite("Secret Service storage")
struct SecretServiceStorageTests {
    static let text = "text/plain"

    @Test func slugsAreLowerCaseASCIIAndNeverEmpty() {
        #expect(Vault.secretServiceSlug("GitHub token", separator: "-") == "github-token")
        #expect(Vault.secretServiceSlug("  Mail: alice@example.com!! ", separator: "-") == "mail-alice-example-com")
        #expect(Vault.secretServiceSlug("ÜÖ/", separator: "-") == "item")
        #expect(Vault.secretServiceSlug(String(repeating: "a", count: 100), separator: "-").count == 32)
    }

    @Test func anItemIsAnOrdinaryItemWithItsLabelAttributesAndContentTypeAsFields() throws {
        let box = try TemporaryVault()
        let v = box.vault
        let c = try #require(try v.secretServiceCollections().first)
        #expect(c.id == "default" && c.folder == "apps")
        let item = try v.createSecretServiceItem(
            in: c, label: "GitHub token", attributes: ["service": "github", "user": "alice"],
            secret: SecretServiceSecret(bytes: Array("s3cret".utf8), contentType: Self.text))
        #expect(item.name.hasPrefix("apps/github-token-") && item.name.count == "apps/github-token-".count + 8)
        #expect(item.primaryField?.value == "s3cret")
        #expect(item.field("attributes")?.value == #"{"service":"github","user":"alice"}"#)
        #expect(c.contains(item.name))
        #expect(!c.contains("apps/sub/x") && !c.contains("work/x"))

        let entry = v.secretServiceEntry(try v.item(named: item.name))
        #expect(entry.label == "GitHub token")
        #expect(entry.matches(["user": "alice"]) && !entry.matches(["user": "bob"]))

        // An edit by hand is what the service reads back; the index sees it.
        let index = SecretServiceIndex(vault: v)
        #expect(try index.items()["default"]?.count == 1)
        var e = ItemEdit()
        e.setFields = [Field(name: "label", value: "Renamed", isSecret: false)]
        _ = try v.edit(item.name, e)
        // (this process's own write: the index is told; another process's
        // commit changes the stamp, which the interop tests cover)
        index.written(try v.item(named: item.name), in: c)
        #expect(try index.items()["default"]?.first?.label == "Renamed")

        let updated = try v.updateSecretServiceItem(
            try v.item(named: item.name), secret: SecretServiceSecret(bytes: [0xff, 0x00], contentType: "application/octet-stream"))
        #expect(v.secretServiceSecret(updated).bytes == [0xff, 0x00])
        #expect(v.secretServiceSecret(updated).contentType == "application/octet-stream")
    }

    @Test func oversizedSecretsNulAttributesAreRefusedAndNothingIsWritten() throws {
        let box = try TemporaryVault()
        let v = box.vault
        let c = try v.secretServiceCollections()[0]
        #expect(throws: CofferError.self) {
            try v.createSecretServiceItem(
                in: c, label: "big", attributes: [:],
                secret: SecretServiceSecret(bytes: Array(repeating: 1, count: Vault.secretServiceMaximumSecret + 1), contentType: Self.text))
        }
        #expect(throws: CofferError.self) {
            try v.createSecretServiceItem(in: c, label: "nul", attributes: ["a\u{0}": "b"], secret: SecretServiceSecret(bytes: [1], contentType: Self.text))
        }
        #expect(try v.list().isEmpty)
    }

    @Test func createdCollectionsAndAliasesAreKeptInTheVault() throws {
        let box = try TemporaryVault()
        let v = box.vault
        let work = try v.createSecretServiceCollection(label: "Work Stuff")
        #expect(work.id == "work_stuff" && work.folder == "apps/work-stuff")
        let again = try v.createSecretServiceCollection(label: "work stuff")
        #expect(again.id == "work_stuff_2")
        try v.setSecretServiceAlias("session", to: work.id)
        #expect(try v.secretServiceAliases()["session"] == "work_stuff")
        #expect(try v.secretServiceAliases()["default"] == "default")
        #expect(try v.secretServiceCollections().map(\.id) == ["default", "work_stuff", "work_stuff_2"])
        try v.removeSecretServiceCollection(work.id)
        #expect(try v.secretServiceAliases()["session"] == "")
        #expect(throws: CofferError.self) { try v.removeSecretServiceCollection("default") }
        // The registry is a reserved item: not listed.
        #expect(try v.list().isEmpty)
    }
}
