import CofferCrypto
import Foundation
import Testing

@testable import CofferKit

/// `Vault.importEntries` / `exportEntries` with attachments (binary fields):
/// bytes and the file flag kept on every path (new item, history,
/// `--on-conflict overwrite`), limits refused naming the entry, the vault
/// unchanged on refusal (docs/import-export.md#attachments).
@Suite struct InterchangeAttachmentKitTests {
    static let binary: [UInt8] = Array(0...255) + [0xFF, 0xFE, 0xC3, 0x28]

    func entry(_ bytes: [UInt8], history: [[UInt8]] = []) -> InterchangeEntry {
        var e = InterchangeEntry(name: "keys/deploy", type: .custom, origin: "entry 1")
        e.fields = [Field(name: "host", value: "h", isSecret: false), Field(name: "id.bin", bytes: bytes, isSecret: true, isFile: true)]
        e.history = history.map { InterchangeVersion(fields: [Field(name: "id.bin", bytes: $0, isSecret: true, isFile: true)]) }
        return e
    }

    @Test func newItemsKeepBytesFlagAndHistory() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        let r = try v.importEntries([entry(Self.binary, history: [[0xC3], [0xFF, 0x00]])])
        #expect(r.count(.added) == 1)
        let item = try v.item(named: "keys/deploy")
        let f = try #require(item.fields.first { $0.name == "id.bin" })
        #expect(f.bytes == Self.binary && f.isFile && f.isSecret)
        let out = try v.exportEntries(includeLocalOnly: false, history: true)
        let e = try #require(out.entries.first)
        #expect(e.fields.first { $0.name == "id.bin" } == f)
        #expect(e.history.map { $0.fields.first { $0.name == "id.bin" }?.bytes } == [[0xC3], [0xFF, 0x00]])
        #expect(e.history.allSatisfy { $0.fields.first { $0.name == "id.bin" }?.isFile == true })
        // Identical on a second import, whatever the history.
        #expect(try v.importEntries([entry(Self.binary)]).count(.identical) == 1)
        // A text field with the same bytes is not the same field.
        var text = entry(Self.binary)
        text.fields[1] = Field(name: "id.bin", bytes: Self.binary, isSecret: true, isFile: false)
        #expect(try v.importEntries([text], options: InterchangeOptions(dryRun: true)).count(.identical) == 0)
    }

    @Test func overwriteReplacesTheAttachmentAndKeepsTheOldInHistory() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        _ = try v.importEntries([entry([1, 2, 3])])
        let r = try v.importEntries([entry(Self.binary)], options: InterchangeOptions(onConflict: .overwrite))
        #expect(r.count(.overwritten) == 1)
        #expect(try v.item(named: "keys/deploy").fields.first { $0.name == "id.bin" }?.bytes == Self.binary)
        let old = try v.exportEntries(includeLocalOnly: false, history: true).entries.first?.history
        #expect(old?.last?.fields.first { $0.name == "id.bin" } == Field(name: "id.bin", bytes: [1, 2, 3], isSecret: true, isFile: true))
    }

    @Test func valuesAboveTheLimitsAreRefusedWhole() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        _ = try v.importEntries([InterchangeEntry(name: "keep", type: .note, fields: [Field(name: "notes", value: "n", isSecret: true)])])
        let before = try BundleSandbox.dump(v)
        let big = [UInt8](repeating: 1, count: Field.maxValueBytes + 1)
        do {
            _ = try v.importEntries([entry([1]), entry(big)])
            Issue.record("accepted a field above 16 MiB")
        } catch {
            #expect(error.kind == .badData && error.message.hasPrefix("entry 1: field 'id.bin' holds") && error.message.contains("16 MiB"), "\(error.message)")
        }
        var twoLarge = entry([UInt8](repeating: 2, count: 15 * 1024 * 1024))
        twoLarge.fields.append(Field(name: "b.bin", bytes: [UInt8](repeating: 3, count: 15 * 1024 * 1024), isSecret: true, isFile: true))
        do {
            _ = try v.importEntries([twoLarge])
            Issue.record("accepted an item above 28 MiB")
        } catch {
            #expect(error.kind == .badData && error.message.contains("28 MiB"), "\(error.message)")
        }
        #expect(try BundleSandbox.dump(v) == before)
    }
}
