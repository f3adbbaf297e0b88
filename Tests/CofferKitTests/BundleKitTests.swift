import CofferCrypto
import CofferStore
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// Checks the committed bundle test kit (docs/bundle-format.md §Test kit):
/// the generator reproduces every file, every file has its expected
/// outcome when read as the spec says, every invalid file is refused by a
/// real import (and dry run) with the vault unchanged, and the full bundle
/// clones into a working vault.
@Suite("bundles: the test kit", .serialized)
struct BundleKitTests {
    static func sidecars() throws -> [[String: Any]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: BundleKit.dir.path).filter { $0.hasSuffix(".json") && $0 != "keys.json" }.sorted()
        return try names.map { try JSONSerialization.jsonObject(with: Data(contentsOf: BundleKit.dir.appendingPathComponent($0))) as! [String: Any] }
    }

    static func bytes(_ file: String) throws -> [UInt8] { Array(try Data(contentsOf: BundleKit.dir.appendingPathComponent(file))) }

    @Test func generatorReproducesTheCommittedKit() throws {
        let (cases, keys) = try BundleKit.generate()
        if ProcessInfo.processInfo.environment["COFFER_REGENERATE_KIT"] == "1" {
            try? FileManager.default.removeItem(at: BundleKit.dir)
            try FileManager.default.createDirectory(at: BundleKit.dir, withIntermediateDirectories: true)
            for c in cases {
                try Data(c.bytes).write(to: BundleKit.dir.appendingPathComponent("\(c.name).cb"))
                try BundleKit.json(c.sidecar).write(to: BundleKit.dir.appendingPathComponent("\(c.name).json"))
            }
            try BundleKit.json(keys).write(to: BundleKit.dir.appendingPathComponent("keys.json"))
        }
        #expect(cases.count >= 50)
        #expect(Set(cases.map(\.name)).count == cases.count)
        for c in cases {
            #expect(try Self.bytes("\(c.name).cb") == c.bytes, "\(c.name).cb differs from the generator's output")
            #expect(try Data(contentsOf: BundleKit.dir.appendingPathComponent("\(c.name).json")) == BundleKit.json(c.sidecar), "\(c.name).json")
        }
        #expect(try Data(contentsOf: BundleKit.dir.appendingPathComponent("keys.json")) == BundleKit.json(keys))
        // Nothing in the folder that the generator does not make.
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: BundleKit.dir.path))
        let made = Set(cases.flatMap { ["\($0.name).cb", "\($0.name).json"] } + ["keys.json"])
        #expect(files == made)
    }

    @Test func everyFileHasItsExpectedOutcome() throws {
        let sidecars = try Self.sidecars()
        #expect(sidecars.count >= 50)
        var seen: Set<String> = []
        for side in sidecars {
            let file = side["file"] as! String
            let expect = side["expect"] as! String
            let bytes = try Self.bytes(file)
            #expect(Hex.encode(KeyedHash.digest(bytes)) == side["blake2b256"] as? String, "\(file)")
            let (got, versions) = BundleKit.outcome(bytes)
            // Receiver rules need the receiving vault: the file itself reads.
            let want = expect.hasPrefix("receiver rule:") ? "success" : expect
            #expect(got == want, "\(file): \(side["description"] ?? "")")
            seen.insert(expect)
            if let member = side["member"] as? String {
                // What a member's identity reads (format 5's sealed keys).
                seen.insert(member)
                #expect(BundleKit.memberOutcome(bytes) == member, "\(file)")
            } else if side["members"] != nil {
                #expect(BundleKit.memberOutcome(bytes) == "success", "\(file)")
            }
            if expect == "success" {
                #expect(Set(versions.map { ($0["item"] as! String) }).count == side["records"] as? Int, "\(file)")
                if let writes = side["writes"] as? [[String: Any]] {
                    let want = try writes.map { w in
                        var w = w
                        w.removeValue(forKey: "nonceIndex")
                        return String(decoding: try BundleKit.json(w), as: UTF8.self)
                    }
                    let have = try versions.map { String(decoding: try BundleKit.json($0), as: UTF8.self) }
                    #expect(have.sorted() == want.sorted(), "\(file)")
                }
            }
        }
        // Every rule of the spec has a file that breaks it.
        // The rules that need a receiver's history (what it accepted before,
        // its own members) are tested by SignedWritesTests.
        for rule in BundleRule.allCases where ![.localReplicaBound, .mutualSupersession, .replicaBinding, .unsignedInSharedVault].contains(rule) {
            // sealed-key-binding: "sealed key rule: …", a member's outcome.
            #expect(seen.contains { $0.hasSuffix("rule: \(rule.rawValue)") }, "no kit file breaks \(rule)")
        }
    }

    /// Every file meant for a receiver is refused by a real import into a
    /// clone of full.cb, naming its rule, and leaves the vault unchanged.
    @Test func receiverCasesAreRefusedByImport() throws {
        let box = BundleSandbox()
        let pass = SecretBytes(copying: Array(BundleKit.passphrase.utf8))
        _ = try Vault.clone(bundleAt: BundleKit.dir.appendingPathComponent("full.cb").path, to: box.path("v.coffer"), passphrase: pass)
        let v = try VaultFile.open(path: box.path("v.coffer")).unlock(passphrase: pass)
        let before = try BundleSandbox.dump(v)
        var checked = 0
        for side in try Self.sidecars() where side["receiver"] != nil || !(side["expect"] as! String).hasPrefix("success") {
            let file = side["file"] as! String
            let expect = side["expect"] as! String
            let path = BundleKit.dir.appendingPathComponent(file).path
            for dry in [true, false] {
                do {
                    if dry { _ = try v.previewImport(paths: [path]) } else { _ = try v.importBundle(at: path) }
                    Issue.record("\(file) was accepted (\(dry ? "dry run" : "import"))")
                } catch {
                    // A file of a newer key epoch is refused before its stream
                    // is read: its key must be adopted first (77).
                    let newerEpoch = file.hasPrefix("header-epoch")
                    #expect(error.exitCode == 65 || error.exitCode == 66 || (newerEpoch && error.exitCode == 77), "\(file): \(error)")
                    if let r = expect.split(separator: ":").last, expect.contains("rule") {
                        #expect(error.message.contains("bundle rule \(r.trimmingCharacters(in: .whitespaces))"), "\(file): \(error.message)")
                    }
                    if expect == "payload authentication failure" { #expect(error.message.contains("fails authentication"), "\(error.message)") }
                }
            }
            checked += 1
        }
        #expect(checked >= 40)
        // clone refuses them too, and leaves nothing behind.
        for file in ["rule-counter-range.cb", "rule-exact-dot.cb", "payload-register-name-field.cb"] {
            #expect(throws: CofferError.self) {
                try Vault.clone(bundleAt: BundleKit.dir.appendingPathComponent(file).path, to: box.path("c.coffer"), passphrase: pass)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: box.dir.path).filter { $0.hasPrefix("c.coffer") || $0.hasPrefix(".c.coffer") }.isEmpty)
        }
        #expect(try BundleSandbox.dump(v) == before)
        // The valid ones import.
        #expect(try v.importBundle(at: BundleKit.dir.appendingPathComponent("delta.cb").path).unchanged == 3)
        let exact = try v.importBundle(at: BundleKit.dir.appendingPathComponent("exact-multiple.cb").path)
        #expect(exact.added == 1)
        #expect(try v.importBundle(at: BundleKit.dir.appendingPathComponent("exact-multiple-empty-final.cb").path).unchanged == 1)
        #expect(try v.item(named: "notes/exact").field("notes")?.value.count ?? 0 > 65_000)
        // rekeyed.cb (format 3, key epoch 1): adopting its key with the kit
        // passphrase re-encrypts the vault; then it imports, and full.cb
        // (epoch 0) is refused, naming both epochs.
        let rekeyed = BundleKit.dir.appendingPathComponent("rekeyed.cb").path
        #expect(throws: CofferError.self) { try v.importBundle(at: rekeyed) }
        let (v1, report) = try v.adoptKeyEpoch(ofBundleAt: rekeyed, passphrase: pass)
        #expect(report.epoch == BundleKit.epochOne && v1.keyEpoch == BundleKit.epochOne)
        _ = try v1.importBundle(at: rekeyed)
        #expect(try v1.item(named: "notes/exact").field("notes")?.value.count ?? 0 > 65_000)
        #expect(try v1.verify().isSound)
        do {
            _ = try v1.importBundle(at: BundleKit.dir.appendingPathComponent("full.cb").path)
            Issue.record("an epoch-0 bundle was imported into an epoch-1 vault")
        } catch {
            #expect(error.exitCode == 65 && error.message.contains("key epoch 0") && error.message.contains("key epoch 1"), "\(error.message)")
        }
        // A clone of rekeyed.cb starts on epoch 1.
        _ = try Vault.clone(bundleAt: rekeyed, to: box.path("r.coffer"), passphrase: pass)
        #expect(try VaultFile.open(path: box.path("r.coffer")).unlock(passphrase: pass).keyEpoch == BundleKit.epochOne)
        // A clone is a vault of format 8 (7 bound the wrapping) whether its bundle's key was
        // wrapped with coffer-wrap-v3 (bound-wrap.cb, format 4) or before
        // (full.cb, format 1: bound by the clone under the same KEK).
        for (file, target) in [("bound-wrap.cb", "b4.coffer"), ("full.cb", "f1.coffer")] {
            _ = try Vault.clone(bundleAt: BundleKit.dir.appendingPathComponent(file).path, to: box.path(target), passphrase: pass)
            let c = try VaultFile.open(path: box.path(target))
            #expect(c.header.formatVersion == VaultStore.formatVersion && c.header.wrapBinding == .integrity, "\(file)")
            #expect(try c.unlock(passphrase: pass).verify().isSound, "\(file)")
            #expect(throws: CofferError.self, "\(file)") { try c.unlock(passphrase: SecretBytes(copying: Array("not it".utf8))) }
        }
    }

    /// signed.cb (format 6) imports into a vault without members: alice
    /// signed it and is a read-write member once its membership is merged;
    /// the same file again (its counter equal to the one accepted) changes
    /// nothing, and an unsigned bundle is then refused (rule
    /// unsigned-in-shared-vault), and a bundle of replica dd signed by
    /// anyone but alice breaks replica-binding. Each refusal leaves the
    /// vault unchanged.
    @Test func signedImportsAndBindsItsReplica() throws {
        let box = BundleSandbox()
        let pass = SecretBytes(copying: Array(BundleKit.passphrase.utf8))
        _ = try Vault.clone(bundleAt: BundleKit.dir.appendingPathComponent("full.cb").path, to: box.path("v.coffer"), passphrase: pass)
        let v = try VaultFile.open(path: box.path("v.coffer")).unlock(passphrase: pass)
        let signed = BundleKit.dir.appendingPathComponent("signed.cb").path
        let preview = try v.previewImport(paths: [signed])
        #expect(preview.reports.first?.signedBy == "alice")
        let r = try v.importBundle(at: signed)
        #expect(r.signedBy == "alice" && r.added == 1)
        #expect(try v.membership().members.map(\.name) == ["alice", "bob"])
        #expect(try v.verify().isSound)
        let before = try BundleSandbox.dump(v)
        let again = try v.importBundle(at: signed)
        #expect(again.added == 0 && again.changed == 0, "\(again)")
        #expect(try BundleSandbox.dump(v) == before)
        for (file, rule) in [("delta.cb", "unsigned-in-shared-vault"), ("signed-by-read-only.cb", "replica-binding")] {
            do {
                _ = try v.importBundle(at: BundleKit.dir.appendingPathComponent(file).path)
                Issue.record("\(file) was accepted")
            } catch {
                #expect(error.exitCode == 65 && error.message.contains("bundle rule \(rule)"), "\(file): \(error.message)")
            }
        }
        #expect(try BundleSandbox.dump(v) == before)
    }

    /// The boundary cases have the chunk layout their names promise.
    @Test func chunkLayouts() throws {
        func chunks(_ file: String) throws -> [Int] {
            let b = try Self.bytes(file)
            var i = 14 + Int(UInt32(b[10]) << 24 | UInt32(b[11]) << 16 | UInt32(b[12]) << 8 | UInt32(b[13])) + 24
            var out: [Int] = []
            while i < b.count {
                let n = Int(UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]))
                out.append(n - SecretStream.overhead)
                i += 4 + n
            }
            return out
        }
        #expect(try chunks("exact-multiple.cb") == [65536])
        #expect(try chunks("exact-multiple-empty-final.cb") == [65536, 0])
        #expect(try chunks("empty.cb") == [0])
        #expect(try chunks("multi-chunk.cb").count == 2)
        #expect(try chunks("multi-chunk.cb").first == 65536)
    }

    /// The full bundle is a real vault's bundle: clone it and read items.
    @Test func fullClonesIntoAWorkingVault() throws {
        let box = BundleSandbox()
        let pass = SecretBytes(copying: Array(BundleKit.passphrase.utf8))
        let r = try Vault.clone(bundleAt: BundleKit.dir.appendingPathComponent("full.cb").path, to: box.path("v.coffer"), passphrase: pass)
        #expect(r.added == 4 && r.conflictsOpened == 1)
        let v = try VaultFile.open(path: box.path("v.coffer")).unlock(passphrase: pass)
        #expect(try v.list().map(\.name) == ["db/prod", "notes/plan", "work/openai"])
        let key = try v.item(named: "work/openai")
        #expect(key.field("key")?.value == "sk-test-0123456789abcdef")
        #expect(key.tags == ["ai", "work"] && key.source == "openai")
        #expect(key.expires?.description == "2027-06-30")
        #expect(key.env == ["key": "OPENAI_API_KEY"])
        #expect(try EnvNaming.variables(for: [key]).map(\.name) == ["OPENAI_API_KEY"])
        let plan = try v.item(named: "notes/plan")
        #expect(plan.field("notes")?.value == "plan A, edited on replica aa") // the later write is shown
        #expect(plan.conflicts.first?.sides.count == 2)
        #expect(try !v.contains("old/key") && !v.contains("home/bank"))
        let db = try v.item(named: "db/prod")
        #expect(db.fields.map(\.name) == ["username"])
        // cc was left out of the summary: its write in the local-only item
        // must not count as seen.
        #expect(try v.summaryFile().vector[BundleKit.replicaC] == 0)
    }
}
