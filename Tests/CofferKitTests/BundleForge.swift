import CofferCrypto
import CofferSync
import Foundation

@testable import CofferKit

/// Writes bundles the way a hostile (or buggy) holder of the vault key
/// would: any header, any versions, every payload correctly encrypted and
/// bound, the stream correctly authenticated. Only the validation rules
/// (docs/bundle-format.md §Validation rules) stand between such a bundle
/// and the vault.
struct BundleForge {
    var vaultID: VaultID
    var kdf: KDFParameters
    var salt: [UInt8]
    var wrappedMasterKey: [UInt8]
    var itemKey: SecretBytes
    var bundleKey: SecretBytes
    var fieldIDKey: SecretBytes
    /// Deterministic nonces and stream header when set (the test kit).
    var nonceLabel: String?

    init(vault: Vault) {
        vaultID = vault.vaultID
        kdf = vault.file.kdf
        salt = vault.file.header.kdfSalt
        wrappedMasterKey = vault.file.header.wrappedMasterKey
        itemKey = vault.keys.item
        bundleKey = vault.keys.bundle
        fieldIDKey = vault.keys.fieldID
    }

    init(vaultID: VaultID, kdf: KDFParameters, salt: [UInt8], wrapped: [UInt8], master: SecretBytes, nonceLabel: String) {
        self.vaultID = vaultID
        self.kdf = kdf
        self.salt = salt
        wrappedMasterKey = wrapped
        itemKey = KeyHierarchy.subKey(.itemPayload, of: master)
        bundleKey = KeyHierarchy.subKey(.bundle, of: master)
        fieldIDKey = KeyHierarchy.subKey(.fieldID, of: master)
        self.nonceLabel = nonceLabel
    }

    /// One version to forge.
    struct Write {
        var item: ItemID
        var register: RegisterID
        var dot: Dot
        var vector: VersionVector
        var writtenAt: Int64
        var tombstone = false
        var payload: FieldPayload
    }

    func field(_ name: String, of item: ItemID) -> RegisterID {
        KeyHierarchy.registerID(field: name, item: item, fieldIDKey: fieldIDKey)
    }

    static func fixed(_ label: String, _ n: Int) -> [UInt8] { KeyedHash.digest(Array(label.utf8), length: n) }

    /// Seals `w` under the item key (a deterministic nonce when
    /// ``nonceLabel`` is set).
    func seal(_ w: Write, index: Int) -> FieldVersion {
        let ad = FieldVersion.associatedData(
            vault: vaultID, item: w.item, register: w.register, dot: w.dot, vector: w.vector, writtenAt: w.writtenAt,
            isTombstone: w.tombstone)
        let box =
            nonceLabel.map { AEAD.seal(w.payload.encoded, nonce: Self.fixed("\($0) payload \(index)", 24), key: itemKey, associatedData: ad) }
            ?? AEAD.seal(w.payload.encoded, key: itemKey, associatedData: ad)
        return FieldVersion(dot: w.dot, vector: w.vector, writtenAt: w.writtenAt, isTombstone: w.tombstone, payload: box)
    }

    /// The item states the writes make, sorted by item id (versions are
    /// not normalised: what is written is what the bundle carries).
    func states(_ writes: [Write]) -> [ItemState] {
        var states: [ItemID: ItemState] = [:]
        for (n, w) in writes.enumerated() {
            states[w.item, default: ItemState(id: w.item)].registers[w.register, default: []].append(seal(w, index: n))
        }
        return states.keys.sorted().map { states[$0]! }
    }

    /// A whole bundle file's bytes.
    func bundle(
        replica: ReplicaID, kind: BundleHeader.Kind = .full, createdAt: Int64, summary: VersionVector,
        since: VersionVector = VersionVector(), writes: [Write], streamLabel: String? = nil,
        wrapping: KeyWrappingVersion = .initial, keyEpoch: KeyEpoch = .initial, wrapBinding: KeyHierarchy.WrapBinding = .legacy,
        sealedKeys: [[UInt8]] = [], signer: MemberSecretKey? = nil, publication: UInt64 = 1
    ) throws -> [UInt8] {
        let items = states(writes)
        var header = BundleHeader(
            vaultID: vaultID, replicaID: replica, kind: kind, createdAt: createdAt, recordCount: UInt64(items.count),
            kdf: kdf, salt: salt, wrappedMasterKey: wrappedMasterKey, summary: summary, since: since,
            wrapping: wrapping, keyEpoch: keyEpoch, wrapBinding: wrapBinding)
        header.sealedKeys = sealedKeys
        if let signer {
            header.publisher = signer.publicKey.signKey
            header.publication = publication
        }
        let out = ByteArrayOutput()
        let label = streamLabel ?? nonceLabel.map { "\($0) stream" }
        let w = try BundleWriter(
            header: header, bundleKey: bundleKey, output: out, streamHeader: label.map { Self.fixed($0, 24) }, signer: signer)
        for s in items { try w.write(s) }
        try w.finish()
        return out.bytes
    }

    /// The writes of a new item (name, type and one secret field), all
    /// under one dot.
    func newItem(_ id: ItemID, name: String, secret: String, dot: Dot, vector: VersionVector? = nil, at t: Int64) -> [Write] {
        let v = vector ?? VersionVector(dot: dot)
        func meta(_ n: String, _ value: String) -> FieldPayload { FieldPayload(name: n, value: Array(value.utf8), isSecret: false) }
        return [
            Write(item: id, register: .name, dot: dot, vector: v, writtenAt: t, payload: meta("@name", name)),
            Write(item: id, register: .type, dot: dot, vector: v, writtenAt: t, payload: meta("@type", "api-key")),
            Write(
                item: id, register: field("key", of: id), dot: dot, vector: v, writtenAt: t,
                payload: FieldPayload(name: "key", value: Array(secret.utf8), isSecret: true)),
        ]
    }

    /// One write of the `key` field of `id`.
    func keyWrite(_ id: ItemID, _ secret: String, dot: Dot, vector: VersionVector, at t: Int64) -> Write {
        Write(
            item: id, register: field("key", of: id), dot: dot, vector: vector, writtenAt: t,
            payload: FieldPayload(name: "key", value: Array(secret.utf8), isSecret: true))
    }
}
