import CofferCrypto
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

/// Format 5 (docs/bundle-format.md §Format 5): a vault with members seals
/// its master key to each of them in every bundle; a vault without members
/// writes the bundles it always wrote.
@Suite("sealed keys in bundles")
struct SealedKeyTests {
    /// Reads `path` with `member`'s identity alone: the sealed key, then
    /// the whole stream under it. Nil when nothing is sealed to it.
    static func readAsMember(_ path: String, _ member: MemberSecretKey) throws -> Int? {
        let input = try BundleFileInput(path: path)
        let (h, prefix) = try BundleHeader.read(from: input)
        guard let key = try h.openSealedKey(with: member) else { return nil }
        let r = try BundleReader(header: h, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: key))
        var n = 0
        while try r.next() != nil { n += 1 }
        return n
    }

    static func header(_ path: String) throws -> BundleHeader {
        try BundleHeader.read(from: try BundleFileInput(path: path)).header
    }

    @Test func noMembersNoSealedKeys() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        try v.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "sk-1", isSecret: true)]))
        try v.exportBundle(to: box.path("b.cb"))
        let h = try Self.header(box.path("b.cb"))
        #expect(h.sealedKeys.isEmpty)
        #expect(h.formatVersion == 4)
        #expect(box.bytes("b.cb")[9] == 4)
    }

    @Test func everyMemberOpensTheBundleAndNoOneElse() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        try v.add(ItemDraft(name: "k", type: .apiKey, fields: [Field(name: "key", value: "sk-1", isSecret: true)]))
        let alice = MemberSecretKey.generate()
        let bob = MemberSecretKey.generate()
        let mallory = MemberSecretKey.generate()
        try v.addMember(name: "alice", publicKey: alice.publicKey)
        try v.addMember(name: "bob", publicKey: bob.publicKey, role: .readOnly)
        try v.exportBundle(to: box.path("b.cb"))
        let h = try Self.header(box.path("b.cb"))
        #expect(h.formatVersion == 5)
        #expect(box.bytes("b.cb")[9] == 5)
        #expect(h.sealedKeys.count == 2)
        #expect(h.sealedKeys == h.sealedKeys.sorted { $0.lexicographicallyPrecedes($1) })
        // The item and the two reserved items that sync (.coffer/members).
        #expect(try Self.readAsMember(box.path("b.cb"), alice) == 2)
        #expect(try Self.readAsMember(box.path("b.cb"), bob) == 2)
        #expect(try Self.readAsMember(box.path("b.cb"), mallory) == nil)
        // The passphrase still opens it: a clone with it works as before.
        let clone = try Vault.clone(bundleAt: box.path("b.cb"), to: box.path("c.coffer"), passphrase: box.passphrase)
        #expect(clone.added == 2)
        let c = try VaultFile.open(path: box.path("c.coffer")).unlock(passphrase: box.passphrase)
        #expect(try c.membership().members.map(\.name) == ["alice", "bob"])
        // The clone's own bundles are sealed to the same members.
        try c.exportBundle(to: box.path("c.cb"))
        #expect(try Self.readAsMember(box.path("c.cb"), bob) == 2)
    }

    @Test func aRemovedMemberCannotOpenTheNewEpoch() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        let alice = MemberSecretKey.generate()
        let carol = MemberSecretKey.generate()
        try v.addMember(name: "alice", publicKey: alice.publicKey)
        try v.addMember(name: "carol", publicKey: carol.publicKey)
        try v.exportBundle(to: box.path("old.cb"))
        #expect(try Self.readAsMember(box.path("old.cb"), carol) == 1)
        let removal = try v.file.removeMember("carol", from: v, passphrase: box.passphrase, sessionDirectories: [])
        #expect(removal.member?.name == "carol")
        try removal.vault.exportBundle(to: box.path("new.cb"))
        let h = try Self.header(box.path("new.cb"))
        #expect(h.keyEpoch.number == 1)
        #expect(h.sealedKeys.count == 1)
        #expect(try Self.readAsMember(box.path("new.cb"), alice) == 1)
        // Carol keeps the old bundle's key, and finds none in the new one.
        #expect(try Self.readAsMember(box.path("new.cb"), carol) == nil)
        #expect(try Self.readAsMember(box.path("old.cb"), carol) == 1)
    }

    @Test func aKeySealedForAnotherVaultIsRefused() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        let w = try box.newVault("w.coffer")
        let alice = MemberSecretKey.generate()
        try v.addMember(name: "alice", publicKey: alice.publicKey)
        try w.addMember(name: "alice", publicKey: alice.publicKey)
        try v.exportBundle(to: box.path("v.cb"))
        try w.exportBundle(to: box.path("w.cb"))
        // v's bundle with the sealed key of w's bundle in its place: the
        // header no longer authenticates under v's key for a key holder,
        // and alice refuses the key before reading anything.
        var bytes = box.bytes("v.cb")
        let hv = try Self.header(box.path("v.cb"))
        let hw = try Self.header(box.path("w.cb"))
        let at = bytes.firstRange(of: hv.sealedKeys[0])!
        bytes.replaceSubrange(at, with: hw.sealedKeys[0])
        box.write("mixed.cb", bytes)
        #expect(throws: BundleError.ruleBroken(.sealedKeyBinding, "the key sealed to this identity is for another vault or key epoch")) {
            try Self.readAsMember(box.path("mixed.cb"), alice)
        }
        let before = try BundleSandbox.dump(v)
        #expect(throws: CofferError.self) { try v.importBundle(at: box.path("mixed.cb")) }
        #expect(try BundleSandbox.dump(v) == before)
    }
}

extension SealedKeyTests {
    /// A key holder can write any text into `.coffer/members` on its own
    /// replica; a low-order X25519 key there must not crash an export nor
    /// be sealed to (anyone could open such a box).
    @Test func aWeakStoredKeyIsRefusedAtExport() throws {
        let box = BundleSandbox()
        let v = try box.newVault()
        let alice = MemberSecretKey.generate()
        try v.addMember(name: "alice", publicKey: alice.publicKey)
        let weak = Bech32m.encode(prefix: "coffer", bytes: [1] + [UInt8](repeating: 0, count: 32) + alice.publicKey.signKey)
        var e = ItemEdit()
        e.setFields = [Field(name: "mallory", value: weak + " read-write", isSecret: false)]
        _ = try v.edit(".coffer/members", e)
        // Listed as unusable, not as a member.
        let m = try v.membership()
        #expect(m.members.map(\.name) == ["alice"])
        #expect(m.unreadable.map(\.name) == ["mallory"])
        #expect {
            try v.exportBundle(to: box.path("b.cb"))
        } throws: { error in
            (error as? CofferError)?.exitCode == 65 && (error as? CofferError)?.message.contains("the member 'mallory' is unusable") == true
        }
        #expect(!FileManager.default.fileExists(atPath: box.path("b.cb")))
    }
}
