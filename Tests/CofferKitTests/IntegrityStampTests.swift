import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferKit

/// Issue 30: `sync`, `export` and `import` read every row to check the
/// vault MAC only when the file is in a state that was never verified
/// (docs/key-hierarchy.md, "Integrity stamp"). What coffer itself wrote
/// since the last check is vouched for; anything else is read again.
@Suite("integrity stamp")
struct IntegrityStampTests {
    static func open(_ box: BundleSandbox, _ name: String) throws -> Vault { try SegmentTests.open(box, name) }
    static func edit(_ v: Vault, _ name: String, _ value: String) throws { try SegmentTests.edit(v, name, value) }

    static func fullChecks(_ v: Vault) -> Int { v.core.integrityStamp.fullCheckCount }

    /// The sync cycle of one machine — an edit, then a sync that merges
    /// the other replica's segment and publishes its own — reads every row
    /// once, at the first sync, and never again while only coffer writes.
    @Test func whatCofferWroteIsNotReadAgain() throws {
        let box = try BundleSandbox()
        let a = try box.newVault("a.coffer")
        for i in 0..<20 { try a.add(apiKey("k/\(i)", "value-\(i)")) }
        let dir = box.path("sync")
        try Vault.createSyncFolder(dir)
        _ = try a.sync(dir: dir)
        #expect(Self.fullChecks(a) == 1)
        let snapshot = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first)
        _ = try Vault.clone(bundleAt: dir + "/" + snapshot, to: box.path("b.coffer"), passphrase: box.passphrase)
        let b = try Self.open(box, "b.coffer")
        for round in 0..<5 {
            try Self.edit(a, "k/1", "a-\(round)")
            try Self.edit(b, "k/2", "b-\(round)")
            _ = try a.sync(dir: dir)
            _ = try b.sync(dir: dir)
        }
        _ = try a.sync(dir: dir)
        #expect(Self.fullChecks(a) == 1, "a read every row again")
        #expect(Self.fullChecks(b) == 1, "b read every row again")
        #expect(try a.item(named: "k/2").field("key")?.value == "b-4")
        #expect(try b.item(named: "k/1").field("key")?.value == "a-4")
        #expect(try a.verify().isSound)
    }

    /// An edit made with SQL after the last check changes the file's
    /// state: the next export reads every row and refuses.
    @Test func anSQLEditAfterTheCheckIsRefused() throws {
        let box = try BundleSandbox()
        let a = try box.newVault("a.coffer")
        for i in 0..<5 { try a.add(apiKey("k/\(i)", "value-\(i)")) }
        _ = try a.exportBundle(to: box.path("one.cb"))
        try Self.edit(a, "k/1", "changed")
        _ = try a.exportBundle(to: box.path("two.cb"))
        #expect(Self.fullChecks(a) == 1)
        // Another program (sqlite3) on the same file: a version row changed.
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "UPDATE fieldVersion SET writtenAt = writtenAt + 1 WHERE counter = (SELECT max(counter) FROM fieldVersion)")
        }
        try other.close()
        #expect(throws: CofferError.self) { try a.exportBundle(to: box.path("three.cb")) }
        #expect(Self.fullChecks(a) == 2)
        #expect(!FileManager.default.fileExists(atPath: box.path("three.cb")))
    }

    /// The state is the file's, not its name's: a copy of the same file,
    /// byte for byte, put in its place is another inode with another
    /// change time, and is read again (here it is genuine, and passes).
    @Test func aFilePutInPlaceIsReadAgain() throws {
        let box = try BundleSandbox()
        let a = try box.newVault("a.coffer")
        try a.add(apiKey("k", "v"))
        _ = try a.exportBundle(to: box.path("one.cb"))
        #expect(Self.fullChecks(a) == 1)
        let copy = box.path("copy.coffer")
        try FileManager.default.copyItem(atPath: a.path, toPath: copy)
        #expect(rename(copy, a.path) == 0)
        let reopened = try Self.open(box, "a.coffer")
        _ = try reopened.exportBundle(to: box.path("two.cb"))
        #expect(Self.fullChecks(reopened) == 1)
    }

    /// The stamp file's authentication: altered, of another vault or
    /// another key, truncated — never trusted.
    @Test func aStampFileIsTrustedOnlyWhenAuthentic() throws {
        let key = SecretBytes(copying: Array(repeating: 7, count: 32))
        let otherKey = SecretBytes(copying: Array(repeating: 8, count: 32))
        let vault = VaultID.random()
        let state = FileState(
            device: 2049, inode: 123_456, size: 4096 * 30, changedSeconds: 1_790_000_000, changedNanoseconds: 123_456_789, changeCounter: 77,
            mac: Array(repeating: 0xAB, count: VaultMAC.length))
        let bytes = IntegrityStamp.encode(state, vault: vault, key: key)
        #expect(bytes.count == IntegrityStamp.fileSize)
        #expect(IntegrityStamp.decode(bytes, vault: vault, key: key) == state)
        #expect(IntegrityStamp.decode(bytes, vault: VaultID.random(), key: key) == nil)
        #expect(IntegrityStamp.decode(bytes, vault: vault, key: otherKey) == nil)
        #expect(IntegrityStamp.decode(Array(bytes.dropLast()), vault: vault, key: key) == nil)
        for i in stride(from: 0, to: bytes.count, by: 7) {
            var flipped = bytes
            flipped[i] ^= 0x01
            #expect(IntegrityStamp.decode(flipped, vault: vault, key: key) == nil, "byte \(i)")
        }
    }

    /// A stamp file that is not a private file of the user is not read.
    @Test func aStampFileOthersCouldWriteIsIgnored() throws {
        let dir = TemporaryDirectory(prefix: "coffer-stamp")
        let key = SecretBytes(copying: Array(repeating: 7, count: 32))
        let vault = VaultID.random()
        let state = FileState(
            device: 1, inode: 2, size: 3, changedSeconds: 4, changedNanoseconds: 5, changeCounter: 6, mac: Array(repeating: 1, count: VaultMAC.length))
        let path = dir.path("s.verified")
        IntegrityStamp(path: path).record(state, vault: vault, key: key)
        #expect(IntegrityStamp(path: path).vouches(for: state, vault: vault, key: key))
        #expect(chmod(path, 0o644) == 0)
        #expect(!IntegrityStamp(path: path).vouches(for: state, vault: vault, key: key))
    }
}
