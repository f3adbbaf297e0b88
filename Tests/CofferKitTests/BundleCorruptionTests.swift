import CofferCrypto
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// Every damaged bundle is refused with exit 65 and leaves the vault
/// exactly as it was (decrypted dump and file bytes).
@Suite("bundles: damaged input (library)", .serialized)
struct BundleCorruptionTests {
    /// A vault `b` (a clone of `a`'s first state) and a multi-chunk full
    /// bundle of `a`'s later state that `b` has not seen.
    final class Fixture: @unchecked Sendable {
        let box = BundleSandbox()
        let b: Vault
        let bundle: [UInt8]
        let dump: String
        let vaultBytes: [UInt8]
        /// Offsets where each stream chunk's length field starts.
        let chunkStarts: [Int]

        init() throws {
            let a = try box.newVault()
            try a.add(apiKey("first", "v1"))
            try a.exportBundle(to: box.path("first.cb"))
            _ = try Vault.clone(bundleAt: box.path("first.cb"), to: box.path("b.coffer"), passphrase: box.passphrase)
            b = try VaultFile.open(path: box.path("b.coffer")).unlock(passphrase: box.passphrase)
            for i in 0..<4 { try a.add(note("notes/\(i)", size: 50_000, seed: i)) }
            try a.edit("first", ItemEdit(setFields: [Field(name: "key", value: "v2", isSecret: true)]))
            try a.exportBundle(to: box.path("full.cb"))
            bundle = box.bytes("full.cb")
            dump = try BundleSandbox.dump(b)
            vaultBytes = box.bytes("b.coffer")
            // Walk the chunk framing.
            let bodyLen = Int(UInt32(bundle[10]) << 24 | UInt32(bundle[11]) << 16 | UInt32(bundle[12]) << 8 | UInt32(bundle[13]))
            var off = 14 + bodyLen + 24
            var starts: [Int] = []
            while off < bundle.count {
                starts.append(off)
                let n = Int(UInt32(bundle[off]) << 24 | UInt32(bundle[off + 1]) << 16 | UInt32(bundle[off + 2]) << 8 | UInt32(bundle[off + 3]))
                off += 4 + n
            }
            chunkStarts = starts
        }

        /// Imports `bytes` into `b`; returns the error, checking that the
        /// vault did not change.
        func refuse(_ bytes: [UInt8], _ what: String) throws -> CofferError? {
            box.write("damaged.cb", bytes)
            do {
                _ = try b.importBundle(at: box.path("damaged.cb"))
                Issue.record("\(what): a damaged bundle was imported")
                return nil
            } catch {
                #expect(error.exitCode == 65, "\(what): \(error)")
                #expect(!error.message.contains("\n"))
                #expect(box.bytes("b.coffer") == vaultBytes, "\(what): vault file changed")
                return error
            }
        }
    }

    @Test func fixtureHasSeveralChunksAndImportsCleanly() throws {
        let f = try Fixture()
        #expect(f.chunkStarts.count >= 4)
        let r = try f.b.importBundle(at: f.box.path("full.cb"))
        #expect(r.added == 4 && r.changed == 1)
    }

    @Test func truncatedAnywhere() throws {
        let f = try Fixture()
        var cuts = Set(0..<min(f.bundle.count, 400))
        for s in f.chunkStarts { for d in -3...5 { cuts.insert(s + d) } }
        cuts.formUnion(stride(from: 0, to: f.bundle.count, by: 1_009))
        cuts.insert(f.bundle.count - 1)
        for cut in cuts.sorted() where cut >= 0 && cut < f.bundle.count {
            let e = try f.refuse(Array(f.bundle.prefix(cut)), "cut at \(cut)")
            guard let e else { continue }
            if cut == 0 {
                #expect(e.message.contains("is empty"))
            } else {
                // Chunks are length-prefixed, so every cut is recognized
                // as truncation, wherever it falls.
                #expect(e.message.contains("is truncated"), "cut at \(cut): \(e.message)")
            }
        }
        #expect(try BundleSandbox.dump(f.b) == f.dump)
    }

    @Test func anySingleBitFlipped() throws {
        let f = try Fixture()
        var positions = Set(0..<min(f.bundle.count, 420))
        for s in f.chunkStarts { for d in -2...40 { positions.insert(s + d) } }
        positions.formUnion(stride(from: 0, to: f.bundle.count, by: 997))
        for d in 1...20 { positions.insert(f.bundle.count - d) }
        var n = 0
        for p in positions.sorted() where p >= 0 && p < f.bundle.count {
            var bytes = f.bundle
            bytes[p] ^= UInt8(1 << (p % 8))
            _ = try f.refuse(bytes, "bit \(p % 8) of byte \(p)")
            n += 1
        }
        #expect(n > 600)
        #expect(try BundleSandbox.dump(f.b) == f.dump)
    }

    @Test func extraBytesAfterTheEnd() throws {
        let f = try Fixture()
        let e = try f.refuse(f.bundle + [0], "one extra byte")
        #expect(e?.message.contains("data after the end") == true)
        // Two bundles joined.
        let e2 = try f.refuse(f.bundle + f.bundle, "two bundles joined")
        #expect(e2?.message.contains("data after the end") == true)
    }

    @Test func notBundles() throws {
        let f = try Fixture()
        #expect(try f.refuse([], "empty")?.message.contains("is empty, not a Coffer bundle") == true)
        var rng = SystemRandomNumberGenerator()
        let random = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }
        #expect(try f.refuse(random, "random")?.message.contains("is not a Coffer bundle (unrecognized data)") == true)
        #expect(try f.refuse(Array("API_KEY=sk-123\n".utf8), "text")?.message.contains("it looks like a text file") == true)
        #expect(try f.refuse(f.vaultBytes, "vault file")?.message.contains("it looks like an SQLite database") == true)
        #expect(try f.refuse(Array("COFFE".utf8), "magic prefix")?.message.contains("truncated") == true)
    }

    @Test func newerAndBogusVersions() throws {
        let f = try Fixture()
        var v7 = f.bundle
        v7[9] = 7
        let e = try f.refuse(v7, "version 7")
        #expect(e?.message.contains("has bundle format 7; this coffer reads format 6") == true)
        #expect(e?.hint == "upgrade coffer on this machine")
        var v0 = f.bundle
        v0[9] = 0
        #expect(try f.refuse(v0, "version 0")?.message.contains("bundle format 0, which does not exist") == true)
    }

    @Test func bundleOfAnotherVault() throws {
        let f = try Fixture()
        let other = try f.box.newVault("other.coffer")
        try other.add(apiKey("svc", "x"))
        try other.exportBundle(to: f.box.path("other.cb"))
        let e = try f.refuse(f.box.bytes("other.cb"), "foreign")
        #expect(e?.message.contains("belongs to another vault") == true)
    }

    @Test func missingFileIsNotFound() throws {
        let f = try Fixture()
        #expect {
            try f.b.importBundle(at: f.box.path("nope.cb"))
        } throws: { ($0 as? CofferError)?.exitCode == 66 }
        #expect {
            try Vault.inspectBundle(at: f.box.path("nope.cb"))
        } throws: { ($0 as? CofferError)?.exitCode == 66 }
    }
}
