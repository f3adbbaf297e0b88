import CofferCrypto
import CofferSync
import Foundation

@testable import CofferKit

/// The bundle test kit (docs/bundle-format.md §Test kit), in the style of
/// age's CCTV: many small bundle files, valid and invalid, each with a
/// sidecar `NAME.json` holding its expected outcome and every input needed
/// to regenerate it, plus `keys.json` with the key material they share.
/// Everything is deterministic: fixed ids, keys and salt, payload nonces
/// and stream headers derived from labels with BLAKE2b.
///
/// Regenerate with `COFFER_REGENERATE_KIT=1 swift test --filter BundleKitTests`.
enum BundleKit {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/bundle-kit")

    static let passphrase = "coffer test kit passphrase"
    /// Part of the kit's fixed inputs (its files are made with it), not the
    /// tests' speed setting (FastKDF): changing it means regenerating the kit.
    static let kdf = KDFParameters(memoryKiB: 8192, iterations: 1, parallelism: 1)
    static let salt = Array("coffer-kit-salt!".utf8) // 16 bytes
    static let masterKey = Array("YELLOW SUBMARINE, BLACK WIZARDRY".utf8) // 32 bytes
    static let otherMasterKey = Array("ANOTHER VAULT'S KEY, NOT THIS ON".utf8)
    /// The master key of key epoch 1 (`rekeyed.cb`: a `coffer rekey` on bb).
    static let rekeyedMasterKey = Array("EPOCH ONE KEY OF THE KIT VAULT!!".utf8)
    static let vault = VaultID(bytes: [UInt8](repeating: 0x11, count: 16))!
    static let replicaA = ReplicaID(bytes: [UInt8](repeating: 0xaa, count: 16))!
    static let replicaB = ReplicaID(bytes: [UInt8](repeating: 0xbb, count: 16))!
    static let replicaC = ReplicaID(bytes: [UInt8](repeating: 0xcc, count: 16))!
    static let createdAt: Int64 = 1_767_225_600_000 // 2026-01-01T00:00:00Z
    static let t0 = createdAt - 86_400_000

    static func fixed(_ label: String, _ n: Int) -> [UInt8] { KeyedHash.digest(Array(label.utf8), length: n) }
    static func item(_ n: UInt8) -> ItemID { ItemID(bytes: [UInt8](repeating: 0, count: 15) + [n])! }

    static var wrapped: [UInt8] {
        let kek = try! Argon2id.deriveKey(passphrase: SecretBytes(copying: Array(passphrase.utf8)), salt: salt, parameters: kdf)
        return AEAD.sealSecret(
            SecretBytes(copying: masterKey), nonce: fixed("coffer kit wrap nonce", 24), key: kek,
            associatedData: KeyHierarchy.wrapAssociatedData(vault: vault, kdf: kdf, salt: salt))
    }

    /// Key epoch 1, made by a rekey on bb at t0 (format 3).
    static let epochOne = KeyEpoch(number: 1, rekeyedBy: replicaB, rekeyedAt: t0)

    /// The epoch-1 key wrapped under the kit passphrase with the
    /// `coffer-wrap-v2` AD (which holds the epoch).
    static var rekeyedWrapped: [UInt8] {
        let kek = try! Argon2id.deriveKey(passphrase: SecretBytes(copying: Array(passphrase.utf8)), salt: salt, parameters: kdf)
        return AEAD.sealSecret(
            SecretBytes(copying: rekeyedMasterKey), nonce: fixed("coffer kit rekeyed wrap nonce", 24), key: kek,
            associatedData: KeyHierarchy.wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, epoch: epochOne))
    }

    /// The kit's master key (epoch 0) wrapped under the kit passphrase
    /// with the `coffer-wrap-v3` AD, as a vault of format 7 wraps it
    /// (format 4, `bound-wrap.cb`).
    static var boundWrapped: [UInt8] {
        let kek = try! Argon2id.deriveKey(passphrase: SecretBytes(copying: Array(passphrase.utf8)), salt: salt, parameters: kdf)
        return AEAD.sealSecret(
            SecretBytes(copying: masterKey), nonce: fixed("coffer kit bound wrap nonce", 24), key: kek,
            associatedData: KeyHierarchy.wrapAssociatedData(vault: vault, kdf: kdf, salt: salt, binding: .integrity))
    }

    /// Another vault's id (a sealed key that names it).
    static let otherVault = VaultID(bytes: [UInt8](repeating: 0x22, count: 16))!

    /// A kit member identity: X25519 secret key and Ed25519 seed from labels.
    static func member(_ name: String) -> MemberSecretKey {
        let text = Bech32m.encode(
            prefix: MemberSecretKey.textPrefix, bytes: [1] + fixed("coffer kit member \(name) x25519", 32) + fixed("coffer kit member \(name) ed25519", 32))
        return try! MemberSecretKey(text: SecretBytes(copying: Array(text.utf8)))
    }

    static let memberAlice = member("alice")
    static let memberBob = member("bob")
    /// A key that is no member of anything (format 6's refusals).
    static let memberMallory = member("mallory")
    /// The replica of the kit's signed bundles (format 6).
    static let replicaD = ReplicaID(bytes: [UInt8](repeating: 0xdd, count: 16))!

    /// The kit master key sealed to `member` for `vault` and `epoch`, with
    /// an ephemeral key pair from a label (reproducible).
    static func sealedKey(to member: MemberSecretKey, vault: VaultID, epoch: KeyEpoch, label: String, master: [UInt8] = masterKey) -> [UInt8] {
        member.publicKey.seal(
            SecretBytes(copying: master), prefix: KeyHierarchy.sealPrefix(vault: vault, epoch: epoch),
            ephemeralSeed: fixed("coffer kit sealed \(label) ephemeral", 32))
    }

    static func forge(_ label: String, master: [UInt8] = masterKey, wrappedKey: [UInt8]) -> BundleForge {
        BundleForge(vaultID: vault, kdf: kdf, salt: salt, wrapped: wrappedKey, master: SecretBytes(copying: master), nonceLabel: "coffer kit \(label)")
    }

    typealias W = BundleForge.Write

    static func v(_ pairs: [ReplicaID: UInt64]) -> VersionVector { VersionVector(pairs) }
    static func meta(_ name: String, _ value: String) -> FieldPayload { FieldPayload(name: name, value: Array(value.utf8), isSecret: false) }
    static func secret(_ name: String, _ value: String) -> FieldPayload { FieldPayload(name: name, value: Array(value.utf8), isSecret: true) }

    /// The base state: an API key with tags, source, expiry and an env
    /// mapping; a note edited concurrently on A and B (a conflict); a
    /// deleted item; a field removed (tombstone); and a local-only item of
    /// A holding a write of C, left out of every bundle.
    static func baseWrites(_ f: BundleForge) -> (synced: [W], localOnly: [W]) {
        let i1 = item(1)
        let i2 = item(2)
        let i3 = item(3)
        let i4 = item(4)
        let i5 = item(5)
        let a1 = Dot(replica: replicaA, counter: 1)
        let a2 = Dot(replica: replicaA, counter: 2)
        let a3 = Dot(replica: replicaA, counter: 3)
        let a4 = Dot(replica: replicaA, counter: 4)
        let a5 = Dot(replica: replicaA, counter: 5)
        let a6 = Dot(replica: replicaA, counter: 6)
        let a7 = Dot(replica: replicaA, counter: 7)
        let b1 = Dot(replica: replicaB, counter: 1)
        let c1 = Dot(replica: replicaC, counter: 1)
        let synced: [W] = [
            W(item: i1, register: .name, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@name", "work/openai")),
            W(item: i1, register: .type, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@type", "api-key")),
            W(item: i1, register: .tags, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@tags", "ai\nwork")),
            W(item: i1, register: .source, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@source", "openai")),
            W(item: i1, register: .expires, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@expires", "2027-06-30")),
            W(item: i1, register: .env, dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: meta("@env", "key=OPENAI_API_KEY")),
            W(item: i1, register: f.field("key", of: i1), dot: a1, vector: v([replicaA: 1]), writtenAt: t0, payload: secret("key", "sk-test-0123456789abcdef")),
            W(item: i2, register: .name, dot: a2, vector: v([replicaA: 2]), writtenAt: t0 + 1000, payload: meta("@name", "notes/plan")),
            W(item: i2, register: .type, dot: a2, vector: v([replicaA: 2]), writtenAt: t0 + 1000, payload: meta("@type", "note")),
            W(
                item: i2, register: f.field("notes", of: i2), dot: a3, vector: v([replicaA: 3]), writtenAt: t0 + 3000,
                payload: secret("notes", "plan A, edited on replica aa")),
            W(
                item: i2, register: f.field("notes", of: i2), dot: b1, vector: v([replicaA: 2, replicaB: 1]), writtenAt: t0 + 2000,
                payload: secret("notes", "plan B, edited on replica bb")),
            W(item: i3, register: .name, dot: a4, vector: v([replicaA: 4]), writtenAt: t0 + 4000, payload: meta("@name", "old/key")),
            W(item: i3, register: .type, dot: a4, vector: v([replicaA: 4]), writtenAt: t0 + 4000, payload: meta("@type", "api-key")),
            W(item: i3, register: f.field("key", of: i3), dot: a4, vector: v([replicaA: 4]), writtenAt: t0 + 4000, payload: secret("key", "sk-old")),
            W(item: i3, register: .deleted, dot: a5, vector: v([replicaA: 5]), writtenAt: t0 + 5000, payload: meta("@deleted", "1")),
            W(item: i4, register: .name, dot: a6, vector: v([replicaA: 6]), writtenAt: t0 + 6000, payload: meta("@name", "db/prod")),
            W(item: i4, register: .type, dot: a6, vector: v([replicaA: 6]), writtenAt: t0 + 6000, payload: meta("@type", "login")),
            W(item: i4, register: f.field("username", of: i4), dot: a6, vector: v([replicaA: 6]), writtenAt: t0 + 6000, payload: meta("username", "admin")),
            W(
                item: i4, register: f.field("password", of: i4), dot: a7, vector: v([replicaA: 7]), writtenAt: t0 + 7000, tombstone: true,
                payload: FieldPayload(name: "password", value: [], isSecret: false)),
        ]
        let localOnly: [W] = [
            W(item: i5, register: .name, dot: c1, vector: v([replicaC: 1]), writtenAt: t0 + 500, payload: meta("@name", "home/bank")),
            W(item: i5, register: .type, dot: c1, vector: v([replicaC: 1]), writtenAt: t0 + 500, payload: meta("@type", "api-key")),
        ]
        return (synced, localOnly)
    }

    /// The exporter's summary: A wrote 7 times, B once; C's only write sits
    /// in A's local-only item, so C is left out (docs/bundle-format.md
    /// §Kinds).
    static let summary = v([replicaA: 7, replicaB: 1])

    /// A generated case: the file's bytes and its sidecar.
    struct Case {
        var name: String
        var bytes: [UInt8]
        var sidecar: [String: Any]
    }

    static func writeJSON(_ w: W, index: Int) -> [String: Any] {
        [
            "item": w.item.hex, "register": Hex.encode(w.register.bytes), "replica": w.dot.replica.hex, "counter": w.dot.counter,
            "vector": Dictionary(uniqueKeysWithValues: w.vector.entries.map { ($0.replica.hex, $0.counter) }),
            "writtenAt": w.writtenAt, "tombstone": w.tombstone,
            "payload": payloadJSON(w.payload),
            "nonceIndex": index,
        ]
    }

    /// A payload in a sidecar; a value over 256 bytes is given by its
    /// length, its first 16 characters (the value repeats them) and its
    /// BLAKE2b-256, to keep the sidecars small.
    static func payloadJSON(_ p: FieldPayload) -> [String: Any] {
        var out: [String: Any] = ["name": p.name, "secret": p.isSecret]
        if p.value.count <= 256 {
            out["value"] = p.text
        } else {
            out["valueLength"] = p.value.count
            out["valueRepeats"] = String(decoding: p.value.prefix(16), as: UTF8.self)
            out["valueBlake2b256"] = Hex.encode(KeyedHash.digest(p.value))
        }
        return out
    }

    static func vectorJSON(_ v: VersionVector) -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: v.entries.map { ($0.replica.hex, $0.counter) })
    }

    /// Plaintext of a stream made of raw record bytes (for malformed records).
    static func rawBundle(_ f: BundleForge, header: BundleHeader, plaintext: [UInt8], label: String, emptyFinal: Bool = false) -> [UInt8] {
        let prefix = header.encoded
        let stream = SecretStream.Writer(key: f.bundleKey, deterministicHeader: fixed("coffer kit \(label) stream", 24))
        var out = prefix + stream.header
        var chunks: [ArraySlice<UInt8>] = []
        var i = 0
        repeat {
            let end = min(i + BundleFormat.chunkSize, plaintext.count)
            chunks.append(plaintext[i..<end])
            i = end
        } while i < plaintext.count
        if emptyFinal { chunks.append([]) }
        for (n, c) in chunks.enumerated() {
            let ct = stream.push(Array(c), tag: n == chunks.count - 1 ? .final : .message, associatedData: n == 0 ? prefix : [])
            var w = ByteWriter()
            w.u32(UInt32(ct.count))
            w.bytes(ct)
            out += w.data
        }
        return out
    }

    static func header(
        kind: BundleHeader.Kind = .full, replica: ReplicaID = replicaA, createdAt: Int64 = createdAt, count: UInt64?, summary: VersionVector = summary,
        since: VersionVector = VersionVector(), wrapped: [UInt8]
    ) -> BundleHeader {
        BundleHeader(
            vaultID: vault, replicaID: replica, kind: kind, createdAt: createdAt, recordCount: count, kdf: kdf, salt: salt,
            wrappedMasterKey: wrapped, summary: summary, since: since)
    }

    // swiftlint:disable:next function_body_length
    static func generate() throws -> (cases: [Case], keys: [String: Any]) {
        let wrappedKey = wrapped
        let master = SecretBytes(copying: masterKey)
        let f = forge("base", wrappedKey: wrappedKey)
        let (synced, localOnly) = baseWrites(f)
        var cases: [Case] = []

        func headerJSON(_ h: BundleHeader) -> [String: Any] {
            var o: [String: Any] = [
                "kind": h.kind.name, "replica": h.replicaID.hex, "createdAt": h.createdAt,
                "recordCount": h.recordCount.map { $0 as Any } ?? "unknown", "summary": vectorJSON(h.summary), "since": vectorJSON(h.since),
            ]
            if h.formatVersion >= 4 { o["formatVersion"] = Int(h.formatVersion) }
            if !h.sealedKeys.isEmpty { o["sealedKeys"] = h.sealedKeys.map { Hex.encode($0) } }
            if !h.wrapping.isInitial {
                o["formatVersion"] = Int(h.formatVersion)
                o["wrapping"] =
                    [
                        "vector": vectorJSON(h.wrapping.vector), "changedBy": h.wrapping.changedBy?.hex ?? "",
                        "changedAt": h.wrapping.changedAt,
                    ] as [String: Any]
            }
            return o
        }

        /// A case whose bytes come from the forge (correctly framed).
        func add(
            _ name: String, _ description: String, expect: String, writes: [W], kind: BundleHeader.Kind = .full, replica: ReplicaID = replicaA,
            createdAt: Int64 = createdAt, summary: VersionVector = summary, since: VersionVector = VersionVector(),
            forge fo: BundleForge? = nil, receiver: Bool = false, mutate: ((inout [UInt8]) -> String)? = nil, extra: [String: Any] = [:]
        ) throws {
            let fo = fo ?? forge(name, wrappedKey: wrappedKey)
            var bytes = try fo.bundle(
                replica: replica, kind: kind, createdAt: createdAt, summary: summary, since: since, writes: writes,
                streamLabel: "coffer kit \(name) stream")
            var side: [String: Any] = [
                "file": "\(name).cb", "description": description, "expect": expect,
                "header": headerJSON(
                    header(
                        kind: kind, replica: replica, createdAt: createdAt, count: UInt64(Set(writes.map(\.item)).count), summary: summary, since: since,
                        wrapped: wrappedKey)),
                "writes": writes.enumerated().map { writeJSON($1, index: $0) },
                "nonceLabel": fo.nonceLabel ?? "", "streamHeaderLabel": "coffer kit \(name) stream",
            ]
            if let mutate { side["mutation"] = mutate(&bytes) }
            if receiver { side["receiver"] = "a vault cloned from full.cb with the kit passphrase" }
            if expect == "success" {
                side["records"] = Set(writes.map(\.item)).count
            }
            for (k, val) in extra { side[k] = val }
            side["blake2b256"] = Hex.encode(KeyedHash.digest(bytes))
            cases.append(Case(name: name, bytes: bytes, sidecar: side))
        }

        /// A case whose plaintext is given as raw bytes.
        func addRaw(
            _ name: String, _ description: String, expect: String, plaintext: [UInt8], count: UInt64?, summary: VersionVector = summary,
            emptyFinal: Bool = false, construction: String
        ) {
            let h = header(count: count, summary: summary, wrapped: wrappedKey)
            let bytes = rawBundle(f, header: h, plaintext: plaintext, label: name, emptyFinal: emptyFinal)
            cases.append(
                Case(
                    name: name, bytes: bytes,
                    sidecar: [
                        "file": "\(name).cb", "description": description, "expect": expect, "header": headerJSON(h),
                        "plaintext": Hex.encode(plaintext.count <= 4096 ? plaintext : []), "plaintextLength": plaintext.count,
                        "construction": construction, "streamHeaderLabel": "coffer kit \(name) stream",
                        "blake2b256": Hex.encode(KeyedHash.digest(bytes)),
                    ].merging(expect == "success" ? ["records": count.map { Int($0) } ?? 0] : [:]) { a, _ in a }))
        }

        // MARK: valid
        try add(
            "full",
            "a full bundle: an API key with tags, source, expiry and env mapping; a note edited concurrently on aa and bb (a conflict); a deleted item; a login whose password field was removed (tombstone). aa's local-only item home/bank (holding cc:1) is absent, and cc is left out of the summary.",
            expect: "success", writes: synced, forge: f, extra: ["localOnlyAbsent": localOnly.enumerated().map { writeJSON($1, index: $0) }])
        let since = v([replicaA: 3])
        try add(
            "delta", "the delta of full against the receiver summary {aa: 3}: only versions whose dot is above it", expect: "success",
            writes: synced.filter { $0.dot.counter > since[$0.dot.replica] }, kind: .delta, since: since)
        try add("empty", "a full bundle of a vault with no synced item: one empty FINAL chunk", expect: "success", writes: [], summary: v([replicaA: 2]))
        let i9 = item(9)
        let d9 = Dot(replica: replicaA, counter: 8)
        let big = String(repeating: "0123456789abcdef", count: 4400) // 70,400 bytes: two chunks
        try add(
            "multi-chunk", "one note of 70,400 bytes: the record spans two chunks", expect: "success",
            writes: [
                W(item: i9, register: .name, dot: d9, vector: v([replicaA: 8]), writtenAt: t0, payload: meta("@name", "notes/big")),
                W(item: i9, register: f.field("notes", of: i9), dot: d9, vector: v([replicaA: 8]), writtenAt: t0, payload: secret("notes", big)),
            ], summary: v([replicaA: 8]))
        // Exactly 2 × 65,536 plaintext bytes: the FINAL chunk holds the
        // last 65,536 (a writer never emits an empty FINAL chunk after data).
        func exactWrites(_ n: Int) -> [W] {
            [
                W(item: i9, register: .name, dot: d9, vector: v([replicaA: 8]), writtenAt: t0, payload: meta("@name", "notes/exact")),
                W(
                    item: i9, register: f.field("notes", of: i9), dot: d9, vector: v([replicaA: 8]), writtenAt: t0,
                    payload: secret("notes", String(repeating: "x", count: n))),
            ]
        }
        let probe = 50_000
        let probeLength = BundleRecord.encodedItem(f.states(exactWrites(probe))[0]).count
        let exact = exactWrites(probe + BundleFormat.chunkSize - probeLength)
        try add(
            "exact-multiple",
            "records of exactly 65,536 bytes (one chunk size): one FINAL chunk, full (a writer never ends with an empty FINAL chunk after data)",
            expect: "success", writes: exact, summary: v([replicaA: 8]))
        let exactPlain = BundleRecord.encodedItem(f.states(exact)[0])
        addRaw(
            "exact-multiple-empty-final", "the same records, written as one full MESSAGE chunk and an empty FINAL chunk: readers accept it", expect: "success",
            plaintext: exactPlain, count: 1, summary: v([replicaA: 8]), emptyFinal: true,
            construction: "the record of exact-multiple (nonce label 'coffer kit base'), chunked by 65,536, then an empty FINAL chunk")

        // MARK: framing and header tampering
        let full = cases[0].bytes
        func prefixLengthOf(_ b: [UInt8]) -> Int { 14 + Int(UInt32(b[10]) << 24 | UInt32(b[11]) << 16 | UInt32(b[12]) << 8 | UInt32(b[13])) }
        let prefixLength = prefixLengthOf(full)
        func damaged(_ name: String, _ description: String, expect: String, _ bytes: [UInt8]) {
            cases.append(
                Case(
                    name: name, bytes: bytes,
                    sidecar: [
                        "file": "\(name).cb", "description": description, "expect": expect, "construction": "from full.cb: \(description)",
                        "blake2b256": Hex.encode(KeyedHash.digest(bytes)),
                    ]))
        }
        damaged("empty-file", "zero bytes", expect: "empty", [])
        damaged("not-a-bundle", "a text file", expect: "not a bundle", Array("OPENAI_API_KEY=sk-test\n".utf8))
        damaged("truncated-magic", "the first 5 bytes", expect: "truncated", Array(full.prefix(5)))
        damaged("truncated-header", "cut inside the header body", expect: "truncated", Array(full.prefix(60)))
        damaged("truncated-stream-header", "cut inside the secretstream header", expect: "truncated", Array(full.prefix(prefixLength + 10)))
        damaged("truncated-chunk", "the last 20 bytes missing", expect: "truncated", Array(full.prefix(full.count - 20)))
        let multi = cases.first { $0.name == "multi-chunk" }!.bytes
        let multiPrefix = prefixLengthOf(multi)
        let chunkBytes = 4 + BundleFormat.chunkSize + SecretStream.overhead
        let firstChunkEnd = multiPrefix + 24 + chunkBytes
        damaged("truncated-before-final", "multi-chunk.cb cut after its first chunk (no FINAL chunk)", expect: "truncated", Array(multi.prefix(firstChunkEnd)))
        damaged("trailing-data", "one zero byte appended", expect: "trailing data", full + [0])
        var newer = full
        newer[9] = 7
        damaged("newer-version", "format version 7", expect: "unsupported version", newer)
        var v2Body1 = full
        v2Body1[9] = 2
        damaged(
            "version-2-without-wrapping", "format version 2 on a format-1 header body (the passphrase wrapping's version is missing)",
            expect: "malformed header", v2Body1)
        // Format 2: a header carrying the version of a passphrase change
        // (docs/sync.md §Passphrase changes). The kit's wrapped key is kept,
        // so the kit passphrase still opens it.
        var changed = header(count: 0, summary: v([replicaA: 2]), wrapped: wrappedKey)
        changed.wrapping = KeyWrappingVersion(vector: v([replicaA: 1, replicaB: 2]), changedBy: replicaB, changedAt: t0)
        let changedBytes = rawBundle(f, header: changed, plaintext: [], label: "passphrase-changed", emptyFinal: false)
        cases.append(
            Case(
                name: "passphrase-changed", bytes: changedBytes,
                sidecar: [
                    "file": "passphrase-changed.cb",
                    "description":
                        "format 2: an empty full bundle whose header carries the passphrase wrapping's version (vector {aa: 1, bb: 2}, changed by bb)",
                    "expect": "success", "header": headerJSON(changed), "records": 0, "plaintext": "", "plaintextLength": 0,
                    "construction": "header format 2 (wrapping version appended to the body), one empty FINAL chunk",
                    "streamHeaderLabel": "coffer kit passphrase-changed stream",
                    "blake2b256": Hex.encode(KeyedHash.digest(changedBytes)),
                ]))
        var wrapTampered = changedBytes
        wrapTampered[prefixLengthOf(changedBytes) - 1] ^= 0x01 // last byte of changedAt
        damaged("header-wrapping-tampered", "passphrase-changed.cb with its wrapping's change time altered", expect: "authentication failure", wrapTampered)
        // Format 3: a bundle written under the key of epoch 1 (a rekey on
        // bb), its key wrapped under the kit passphrase with the epoch in
        // the wrap AD (docs/bundle-format.md §Format 3).
        let rekeyedWrappedKey = rekeyedWrapped
        var rekeyed = header(count: 0, summary: v([replicaA: 2]), wrapped: rekeyedWrappedKey)
        rekeyed.wrapping = KeyWrappingVersion(vector: v([replicaB: 1]), changedBy: replicaB, changedAt: t0)
        rekeyed.keyEpoch = epochOne
        let rekeyedBytes = rawBundle(
            forge("rekeyed", master: rekeyedMasterKey, wrappedKey: rekeyedWrappedKey), header: rekeyed, plaintext: [], label: "rekeyed", emptyFinal: false)
        cases.append(
            Case(
                name: "rekeyed", bytes: rekeyedBytes,
                sidecar: [
                    "file": "rekeyed.cb",
                    "description":
                        "format 3: an empty full bundle written under the master key of key epoch 1 (rekeyed on bb at t0); its header wraps that key under the kit passphrase with the coffer-wrap-v2 AD; read it with rekeyedMasterKey of keys.json",
                    "expect": "success", "header": headerJSON(rekeyed), "records": 0, "plaintext": "", "plaintextLength": 0,
                    "keyEpoch": ["number": 1, "rekeyedBy": replicaB.hex, "rekeyedAt": t0],
                    "construction":
                        "header format 3 (wrapping version {bb: 1} changed by bb, then the key epoch appended to the body), one empty FINAL chunk under the bundle key of rekeyedMasterKey",
                    "streamHeaderLabel": "coffer kit rekeyed stream",
                    "blake2b256": Hex.encode(KeyedHash.digest(rekeyedBytes)),
                ]))
        var epochTampered = rekeyedBytes
        epochTampered[prefixLengthOf(rekeyedBytes) - 1] ^= 0x01 // last byte of rekeyedAt
        damaged("header-epoch-tampered", "rekeyed.cb with its key epoch's time altered", expect: "authentication failure", epochTampered)
        // Format 4: the master key wrapped with `coffer-wrap-v3` (a vault of
        // format 7); the format-3 body, its wrapping version and key epoch
        // present even when initial.
        let boundWrappedKey = boundWrapped
        var bound = header(count: 0, summary: v([replicaA: 2]), wrapped: boundWrappedKey)
        bound.wrapBinding = .integrity
        let boundBytes = rawBundle(forge("bound-wrap", wrappedKey: boundWrappedKey), header: bound, plaintext: [], label: "bound-wrap", emptyFinal: false)
        cases.append(
            Case(
                name: "bound-wrap", bytes: boundBytes,
                sidecar: [
                    "file": "bound-wrap.cb",
                    "description":
                        "format 4: an empty full bundle whose header wraps the kit master key under the kit passphrase with the coffer-wrap-v3 AD (boundWrappedMasterKey of keys.json), with the initial wrapping version and key epoch 0",
                    "expect": "success", "header": headerJSON(bound), "records": 0, "plaintext": "", "plaintextLength": 0,
                    "construction":
                        "header format 4 (the format-1 body, then the initial wrapping version: empty vector, 16 zero bytes, time 0; then key epoch 0: number 0, 16 zero bytes, time 0), one empty FINAL chunk",
                    "streamHeaderLabel": "coffer kit bound-wrap stream",
                    "blake2b256": Hex.encode(KeyedHash.digest(boundBytes)),
                ]))
        var boundAsThree = boundBytes
        boundAsThree[9] = 3
        damaged(
            "version-3-with-initial-epoch", "bound-wrap.cb declared format 3 (a format-3 body may not carry key epoch 0 or the initial wrapping)",
            expect: "malformed header", boundAsThree)
        // Format 5: the master key also sealed to members (shared vaults,
        // docs/sharing.md): format 4's body, then the sealed keys.
        let sealedHeaderBase = bound
        var sealed = sealedHeaderBase
        sealed.sealedKeys = [
            sealedKey(to: memberAlice, vault: vault, epoch: .initial, label: "alice"),
            sealedKey(to: memberBob, vault: vault, epoch: .initial, label: "bob"),
        ].sorted { $0.lexicographicallyPrecedes($1) }
        let sealedBytes = rawBundle(forge("sealed", wrappedKey: boundWrappedKey), header: sealed, plaintext: [], label: "sealed", emptyFinal: false)
        cases.append(
            Case(
                name: "sealed", bytes: sealedBytes,
                sidecar: [
                    "file": "sealed.cb",
                    "description":
                        "format 5: bound-wrap.cb's header (the kit master key wrapped with the coffer-wrap-v3 AD) followed by the master key sealed to the kit members alice and bob; opens with their secret identities (memberAlice, memberBob of keys.json)",
                    "expect": "success", "header": headerJSON(sealed), "records": 0, "plaintext": "", "plaintextLength": 0,
                    "members": ["alice", "bob"],
                    "construction":
                        "header format 5 (the format-4 body, then u16 2 and the two sealed keys in increasing byte order; each is crypto_box_seal of \"coffer-seal-v1\" || vault id || key epoch (32) || master key to the member's X25519 key, its ephemeral key pair crypto_box_seed_keypair(BLAKE2b-256(\"coffer kit sealed <member> ephemeral\"))), one empty FINAL chunk",
                    "streamHeaderLabel": "coffer kit sealed stream",
                    "blake2b256": Hex.encode(KeyedHash.digest(sealedBytes)),
                ]))
        var foreignSealed = sealedHeaderBase
        foreignSealed.sealedKeys = [sealedKey(to: memberAlice, vault: otherVault, epoch: .initial, label: "alice")]
        let foreignSealedBytes = rawBundle(
            forge("sealed-key-other-vault", wrappedKey: boundWrappedKey), header: foreignSealed, plaintext: [], label: "sealed-key-other-vault",
            emptyFinal: false)
        cases.append(
            Case(
                name: "sealed-key-other-vault", bytes: foreignSealedBytes,
                sidecar: [
                    "file": "sealed-key-other-vault.cb",
                    "description":
                        "format 5: a valid bundle of the kit vault whose one sealed key, to alice, names another vault (22…22) in its sealed prefix: a key holder reads it; alice's identity MUST refuse the key (rule sealed-key-binding)",
                    "expect": "success", "member": "sealed key rule: sealed-key-binding", "header": headerJSON(foreignSealed), "records": 0,
                    "plaintext": "", "plaintextLength": 0, "members": ["alice"],
                    "construction": "as sealed.cb, with one sealed key to alice whose plaintext's vault id is 22…22",
                    "streamHeaderLabel": "coffer kit sealed-key-other-vault stream",
                    "blake2b256": Hex.encode(KeyedHash.digest(foreignSealedBytes)),
                ]))
        let sealedPrefixLength = prefixLengthOf(sealedBytes)
        var sealedTampered = sealedBytes
        sealedTampered[sealedPrefixLength - 10] ^= 0x01 // inside the last sealed key
        damaged("sealed-key-tampered", "sealed.cb with a bit of a sealed key flipped", expect: "authentication failure", sealedTampered)
        // The two sealed keys swapped: not in increasing byte order.
        var unsorted = sealedBytes
        let k = BundleFormat.sealedKeyLength
        let firstKey = sealedPrefixLength - 2 * k
        let a = Array(unsorted[firstKey..<(firstKey + k)])
        let b = Array(unsorted[(firstKey + k)..<sealedPrefixLength])
        unsorted.replaceSubrange(firstKey..<sealedPrefixLength, with: b + a)
        damaged("sealed-keys-unsorted", "sealed.cb with its two sealed keys swapped (not in increasing byte order)", expect: "malformed header", unsorted)
        var boundAsFive = boundBytes
        boundAsFive[9] = 5
        damaged(
            "version-5-without-sealed-keys", "bound-wrap.cb declared format 5 (the sealed keys are missing from its body)", expect: "malformed header",
            boundAsFive)
        // bound-wrap.cb declared format 5 with a count of 0 sealed keys.
        let boundPrefix = prefixLengthOf(boundBytes)
        var none = Array(boundBytes[0..<boundPrefix]) + [0, 0] + Array(boundBytes[boundPrefix...])
        none[9] = 5
        let newLength = UInt32(boundPrefix + 2 - 14)
        none[10] = UInt8(newLength >> 24)
        none[11] = UInt8((newLength >> 16) & 0xff)
        none[12] = UInt8((newLength >> 8) & 0xff)
        none[13] = UInt8(newLength & 0xff)
        damaged("sealed-keys-none", "bound-wrap.cb declared format 5 with a sealed-key count of 0 (write format 4)", expect: "malformed header", none)
        // Format 6: signed by a member (docs/sharing.md, "Signed writes"):
        // format 5's body, then the publisher's Ed25519 key and publication
        // counter; the signature after the FINAL chunk.
        let membersItem = item(10)
        let d1 = Dot(replica: replicaD, counter: 1)
        let signedForge = forge("signed", wrappedKey: boundWrappedKey)
        let membersWrites: [W] = [
            W(item: membersItem, register: .name, dot: d1, vector: v([replicaD: 1]), writtenAt: t0, payload: meta("@name", ".coffer/members")),
            W(item: membersItem, register: .type, dot: d1, vector: v([replicaD: 1]), writtenAt: t0, payload: meta("@type", "custom")),
            W(
                item: membersItem, register: signedForge.field("alice", of: membersItem), dot: d1, vector: v([replicaD: 1]), writtenAt: t0,
                payload: meta("alice", memberAlice.publicKey.text + " read-write")),
            W(
                item: membersItem, register: signedForge.field("bob", of: membersItem), dot: d1, vector: v([replicaD: 1]), writtenAt: t0,
                payload: meta("bob", memberBob.publicKey.text + " read-only")),
        ]
        func signedCase(_ name: String, signer: MemberSecretKey, publication: UInt64 = 1, expect: String, description: String) throws -> [UInt8] {
            let fo = forge(name, wrappedKey: boundWrappedKey)
            let bytes = try fo.bundle(
                replica: replicaD, createdAt: createdAt, summary: v([replicaD: 1]), writes: membersWrites, streamLabel: "coffer kit \(name) stream",
                wrapBinding: .integrity, sealedKeys: sealed.sealedKeys, signer: signer, publication: publication)
            var h = sealed
            h.replicaID = replicaD
            h.summary = v([replicaD: 1])
            h.recordCount = 1
            h.publisher = signer.publicKey.signKey
            h.publication = publication
            var header = headerJSON(h)
            header["publisher"] = Hex.encode(signer.publicKey.signKey)
            header["publication"] = publication
            var side: [String: Any] = [
                "file": "\(name).cb", "description": description, "expect": expect, "header": header, "members": ["alice", "bob"],
                "writes": membersWrites.enumerated().map { writeJSON($1, index: $0) }, "nonceLabel": fo.nonceLabel ?? "",
                "streamHeaderLabel": "coffer kit \(name) stream",
                "construction":
                    "header format 6 (sealed.cb's body with replica dd…dd, summary {dd: 1} and one record, then the publisher's Ed25519 key (32) and u64 publication counter), the records, then the Ed25519 signature (64) of BLAKE2b-512 of every byte before it",
                "blake2b256": Hex.encode(KeyedHash.digest(bytes)),
            ]
            if expect == "success" || expect.hasPrefix("receiver") {
                side["records"] = 1
                side["receiver"] = "a vault cloned from full.cb with the kit passphrase (no members)"
            }
            if expect == "success" { side.removeValue(forKey: "receiver") }
            cases.append(Case(name: name, bytes: bytes, sidecar: side))
            return bytes
        }
        let signedBytes = try signedCase(
            "signed", signer: memberAlice, expect: "success",
            description:
                "format 6: the .coffer/members item (alice read-write, bob read-only) written on replica dd, signed by alice (publication 1): a receiver takes it (alice is a read-write member once the bundle's membership is merged) and binds dd to alice"
        )
        _ = try signedCase(
            "signed-by-read-only", signer: memberBob, expect: "receiver rule: signer-member",
            description: "format 6: signed.cb's records signed by bob, a read-only member in them: every receiver refuses it")
        _ = try signedCase(
            "signed-by-non-member", signer: memberMallory, expect: "receiver rule: signer-member",
            description: "format 6: signed.cb's records signed by mallory, no member: every receiver refuses it")
        var flippedSignature = signedBytes
        flippedSignature[signedBytes.count - 1] ^= 0x01
        damaged("signed-signature-flipped", "signed.cb with a bit of its signature flipped", expect: "rule: signature", flippedSignature)
        var flippedRecord = signedBytes
        let signedPrefix = prefixLengthOf(signedBytes)
        flippedRecord[signedPrefix - 3] ^= 0x01 // inside the publication counter: chunk 0's associated data
        damaged("signed-counter-tampered", "signed.cb with its publication counter changed", expect: "authentication failure", flippedRecord)
        damaged(
            "signed-signature-missing", "signed.cb without its last 64 bytes (the signature)", expect: "truncated",
            Array(signedBytes.prefix(signedBytes.count - 64)))
        damaged("signed-trailing-data", "signed.cb with one zero byte after the signature", expect: "trailing data", signedBytes + [0])
        var zeroPublication = Array(signedBytes.prefix(signedPrefix))
        for i in (signedPrefix - 8)..<signedPrefix { zeroPublication[i] = 0 }
        damaged(
            "signed-counter-zero", "signed.cb's header with publication counter 0 (rule publication-counter: 1 to 2^53)",
            expect: "rule: publication-counter", zeroPublication + Array(signedBytes[signedPrefix...]))
        var sealedAsSix = sealedBytes
        sealedAsSix[9] = 6
        damaged(
            "version-6-without-publisher", "sealed.cb declared format 6 (the publisher key and counter are missing)", expect: "malformed header", sealedAsSix)
        var v3Body2 = changedBytes
        v3Body2[9] = 3
        damaged(
            "version-3-without-epoch", "passphrase-changed.cb declared format 3 (the key epoch is missing from its body)", expect: "malformed header", v3Body2)
        var zero = full
        zero[9] = 0
        damaged("version-zero", "format version 0", expect: "unsupported version", zero)
        var long = full
        long[10] = 0x01 // L > 4 MiB
        damaged("header-length-too-large", "header length above 4 MiB", expect: "malformed header", long)
        var kind = full
        kind[14 + 32] = 3
        damaged("unknown-kind", "kind byte 3", expect: "malformed header", kind)
        var replica = full
        replica[30] ^= 0x01
        damaged(
            "header-replica-flipped", "a bit of the replica id (the header is the first chunk's associated data)", expect: "authentication failure", replica)
        var countTampered = full
        countTampered[14 + 33 + 8 + 7] ^= 0x01
        damaged("header-count-tampered", "the record count changed", expect: "authentication failure", countTampered)
        var summaryTampered = full
        summaryTampered[prefixLength - 3] ^= 0x02 // inside the summary's last counter (the since vector is 2 bytes)
        damaged("header-summary-tampered", "a summary counter changed", expect: "authentication failure", summaryTampered)
        var streamHeader = full
        streamHeader[prefixLength + 3] ^= 0x01
        damaged("stream-header-flipped", "a bit of the secretstream header", expect: "authentication failure", streamHeader)
        var chunkFlip = full
        chunkFlip[prefixLength + 24 + 4 + 100] ^= 0x01
        damaged("chunk-bit-flipped", "a bit inside the chunk ciphertext", expect: "authentication failure", chunkFlip)
        var macFlip = full
        macFlip[full.count - 1] ^= 0x80
        damaged("final-mac-flipped", "the last bit of the FINAL chunk's MAC", expect: "authentication failure", macFlip)
        var chunkLength = full
        chunkLength[prefixLength + 24] = 0xff
        damaged("chunk-length-out-of-range", "a chunk length above 65,553", expect: "authentication failure", chunkLength)
        let other = forge("wrong-key", master: otherMasterKey, wrappedKey: wrappedKey)
        try add(
            "wrong-key", "the records encrypted under another vault's bundle key, with this vault's header", expect: "authentication failure",
            writes: Array(synced.prefix(2)), forge: other)
        let swapped = Array(multi.prefix(multiPrefix + 24)) + Array(multi[firstChunkEnd...]) + Array(multi[(multiPrefix + 24)..<firstChunkEnd])
        damaged("chunks-reordered", "multi-chunk.cb with its two chunks swapped", expect: "authentication failure", swapped)

        // MARK: malformed records (authenticated)
        let rec1 = BundleRecord.encodedItem(f.states(Array(synced.prefix(7)))[0])
        var badType = rec1
        badType[0] = 2
        addRaw(
            "record-unknown-type", "a record of type 2", expect: "malformed record", plaintext: badType, count: 1,
            construction: "the record of work/openai with its type byte set to 2")
        var flags = rec1
        // The first version's flags byte: type(1) len(4) item(16) n(4) register(16) replica(16) counter(8) vector(2+24) time(8).
        flags[5 + 16 + 4 + 16 + 16 + 8 + 26 + 8] = 0x02
        addRaw(
            "record-reserved-flag", "a version with flag bit 1 set", expect: "malformed record", plaintext: flags, count: 1,
            construction: "the record of work/openai with the first version's flags byte set to 0x02")
        addRaw(
            "record-trailing-bytes", "a record body one byte longer than its versions", expect: "malformed record",
            plaintext: {
                var r = rec1
                r.append(0)
                let n = UInt32(r.count - 5)
                r[1] = UInt8(n >> 24)
                r[2] = UInt8(truncatingIfNeeded: n >> 16)
                r[3] = UInt8(truncatingIfNeeded: n >> 8)
                r[4] = UInt8(truncatingIfNeeded: n)
                return r
            }(), count: 1, construction: "the record of work/openai with a zero byte appended to its body and the body length raised by one")
        addRaw(
            "record-ends-early", "the plaintext ends inside a record", expect: "malformed record", plaintext: Array(rec1.prefix(rec1.count - 3)), count: 1,
            construction: "the record of work/openai without its last 3 bytes")
        var zeroCounter = rec1
        for i in 0..<8 { zeroCounter[5 + 16 + 4 + 16 + 16 + i] = 0 }
        addRaw(
            "record-zero-counter", "a version with dot counter 0", expect: "malformed record", plaintext: zeroCounter, count: 1,
            construction: "the record of work/openai with the first version's dot counter set to 0")
        let recs = f.states(synced).map { BundleRecord.encodedItem($0) }
        addRaw(
            "records-out-of-order", "item records not sorted by item id", expect: "malformed record", plaintext: recs[1] + recs[0], count: 2,
            construction: "the records of notes/plan then work/openai")
        addRaw(
            "record-count-mismatch", "the header announces 3 records, the stream holds 2", expect: "malformed record", plaintext: recs[0] + recs[1], count: 3,
            construction: "the records of work/openai and notes/plan under a header announcing 3")

        // MARK: validation rules (docs/bundle-format.md §Validation rules)
        let i7 = item(7)
        func newItem(_ dot: Dot, vector: VersionVector? = nil, at t: Int64 = t0, name: String = "forged/x") -> [W] {
            let vv = vector ?? VersionVector(dot: dot)
            return [
                W(item: i7, register: .name, dot: dot, vector: vv, writtenAt: t, payload: meta("@name", name)),
                W(item: i7, register: f.field("key", of: i7), dot: dot, vector: vv, writtenAt: t, payload: secret("key", "forged")),
            ]
        }
        let m = ReplicaID(bytes: [UInt8](repeating: 0xee, count: 16))!
        let huge: UInt64 = 1 << 63
        try add(
            "rule-counter-range", "a version with counter 2^63 (it used to kill import with SIGILL)", expect: "rule: counter-range",
            writes: newItem(Dot(replica: m, counter: huge)), replica: m, summary: v([m: huge]), receiver: true)
        try add(
            "rule-counter-range-vector", "a vector entry of 2^53 + 1 for another replica", expect: "rule: counter-range",
            writes: newItem(Dot(replica: m, counter: 1), vector: v([m: 1, replicaB: (1 << 53) + 1])), replica: m, summary: v([m: 1]), receiver: true)
        try add(
            "rule-counter-range-summary", "a summary entry of 2^63", expect: "rule: counter-range", writes: newItem(Dot(replica: m, counter: 1)), replica: m,
            summary: v([m: 1, replicaB: huge]), receiver: true)
        try add(
            "rule-counter-range-since", "a delta whose since-vector holds 2^63", expect: "rule: counter-range", writes: newItem(Dot(replica: m, counter: 1)),
            kind: .delta, replica: m, summary: v([m: 1]), since: v([replicaB: huge]), receiver: true)
        try add(
            "rule-exact-dot", "version ee:1 with vector {aa: 2^40} (the vector does not hold its own dot)", expect: "rule: exact-dot",
            writes: newItem(Dot(replica: m, counter: 1), vector: v([replicaA: 1 << 40])), replica: m, summary: v([m: 1, replicaA: 1 << 40]), receiver: true)
        try add(
            "rule-exact-dot-above", "version ee:1 with vector {ee: 2}", expect: "rule: exact-dot",
            writes: newItem(Dot(replica: m, counter: 1), vector: v([m: 2])), replica: m, summary: v([m: 2]), receiver: true)
        try add(
            "rule-summary-bound", "version ee:5 from exporter ee whose summary claims ee:3", expect: "rule: summary-bound",
            writes: newItem(Dot(replica: m, counter: 5)), replica: m, summary: v([m: 3]), receiver: true)
        try add(
            "claim-beyond-summary",
            "a vector entry bb:2^40 while the summary claims bb:2 (a key holder's claim on bb's writes, as an honest exporter holds it after merging it: allowed; a receiver whose id is bb takes a new replica id before merging, docs/sync.md \"Hostile bundles\")",
            expect: "success", writes: newItem(Dot(replica: m, counter: 1), vector: v([m: 1, replicaB: 1 << 40])), replica: m, summary: v([m: 1, replicaB: 2]))
        try add(
            "rule-summary-bound-other", "a version with dot bb:9 while the summary claims bb:2", expect: "rule: summary-bound",
            writes: newItem(Dot(replica: replicaB, counter: 9)), replica: m, summary: v([m: 1, replicaB: 2]), receiver: true)
        var superseding = newItem(Dot(replica: m, counter: 1))
        superseding.append(
            W(item: i7, register: f.field("key", of: i7), dot: Dot(replica: m, counter: 2), vector: v([m: 2]), writtenAt: t0, payload: secret("key", "newer")))
        try add(
            "rule-concurrent-versions", "two versions of one field in one record, the second containing the first's dot", expect: "rule: concurrent-versions",
            writes: superseding, replica: m, summary: v([m: 2]), receiver: true)
        try add(
            "rule-time-range", "a version written at -1 ms", expect: "rule: time-range", writes: newItem(Dot(replica: m, counter: 1), at: -1), replica: m,
            summary: v([m: 1]), receiver: true)
        try add(
            "rule-time-range-header", "a bundle created at -1 ms", expect: "rule: time-range", writes: newItem(Dot(replica: m, counter: 1), at: 0), replica: m,
            createdAt: -1, summary: v([m: 1]), receiver: true)
        try add(
            "rule-written-after-bundle", "a version written in the year 3000 in a bundle of 2026 (it would win every conflict's shown value)",
            expect: "rule: written-after-bundle", writes: newItem(Dot(replica: m, counter: 1), at: 32_503_680_000_000), replica: m, summary: v([m: 1]),
            receiver: true)
        try add(
            "rule-future-bundle", "a bundle created in the year 3000 (checked against the receiver's clock)", expect: "receiver rule: future-bundle",
            writes: newItem(Dot(replica: m, counter: 1), at: 32_503_680_000_000), replica: m, createdAt: 32_503_680_000_000, summary: v([m: 1]), receiver: true)

        // MARK: payload rules (checked after decryption)
        let wrongName = [W(item: i7, register: .name, dot: Dot(replica: m, counter: 1), vector: v([m: 1]), writtenAt: t0, payload: meta("@type", "api-key"))]
        try add(
            "payload-register-name-metadata", "metadata register 1 (@name) holding a payload named @type", expect: "payload rule: register-name",
            writes: wrongName, replica: m, summary: v([m: 1]), receiver: true)
        let misfiled = [
            W(item: i7, register: f.field("key", of: i7), dot: Dot(replica: m, counter: 1), vector: v([m: 1]), writtenAt: t0, payload: secret("password", "x"))
        ]
        try add(
            "payload-register-name-field", "the register id of field 'key' holding a payload named 'password'", expect: "payload rule: register-name",
            writes: misfiled, replica: m, summary: v([m: 1]), receiver: true)
        let unknownMeta = [
            W(item: i7, register: RegisterID(high: 0, low: 9), dot: Dot(replica: m, counter: 1), vector: v([m: 1]), writtenAt: t0, payload: meta("@nine", "x"))
        ]
        try add(
            "payload-unknown-metadata", "metadata register 9, which does not exist", expect: "payload rule: register-name", writes: unknownMeta, replica: m,
            summary: v([m: 1]), receiver: true)
        let fatTomb = [
            W(
                item: i7, register: f.field("key", of: i7), dot: Dot(replica: m, counter: 1), vector: v([m: 1]), writtenAt: t0, tombstone: true,
                payload: secret("key", "still here"))
        ]
        try add(
            "payload-tombstone-value", "a tombstone carrying a value", expect: "payload rule: empty-tombstone", writes: fatTomb, replica: m, summary: v([m: 1]),
            receiver: true)
        let binary = [
            W(
                item: i7, register: f.field("key", of: i7), dot: Dot(replica: m, counter: 1), vector: v([m: 1]), writtenAt: t0,
                payload: FieldPayload(name: "key", value: [0xff, 0xfe, 0x00], isSecret: true))
        ]
        try add(
            "payload-not-utf8", "a value that is not UTF-8", expect: "payload rule: text-value", writes: binary, replica: m, summary: v([m: 1]), receiver: true)
        try add(
            "payload-wrong-item-key", "a payload sealed under another vault's item key (the stream is this vault's)", expect: "payload authentication failure",
            writes: newItem(Dot(replica: m, counter: 1)), replica: m, summary: v([m: 1]),
            forge: {
                var fo = forge("payload-wrong-item-key", wrappedKey: wrappedKey)
                fo.itemKey = KeyHierarchy.subKey(.itemPayload, of: SecretBytes(copying: otherMasterKey))
                return fo
            }(), receiver: true)

        let keys: [String: Any] = [
            "passphrase": passphrase,
            "kdf": ["algorithm": "argon2id", "memoryKiB": kdf.memoryKiB, "iterations": kdf.iterations, "parallelism": kdf.parallelism],
            "salt": Hex.encode(salt), "wrapNonceLabel": "coffer kit wrap nonce",
            "masterKey": Hex.encode(masterKey), "wrappedMasterKey": Hex.encode(wrappedKey),
            "itemKey": Hex.encode(KeyHierarchy.subKey(.itemPayload, of: master).revealedBytes()),
            "bundleKey": Hex.encode(KeyHierarchy.subKey(.bundle, of: master).revealedBytes()),
            "fieldIDKey": Hex.encode(KeyHierarchy.subKey(.fieldID, of: master).revealedBytes()),
            "otherMasterKey": Hex.encode(otherMasterKey),
            "rekeyedMasterKey": Hex.encode(rekeyedMasterKey), "rekeyedWrappedMasterKey": Hex.encode(rekeyedWrapped),
            "rekeyedWrapNonceLabel": "coffer kit rekeyed wrap nonce",
            "boundWrappedMasterKey": Hex.encode(boundWrapped), "boundWrapNonceLabel": "coffer kit bound wrap nonce",
            "memberAlice": [
                "secretIdentity": String(decoding: memberAlice.secretText().revealedBytes(), as: UTF8.self), "publicIdentity": memberAlice.publicKey.text,
            ],
            "memberBob": [
                "secretIdentity": String(decoding: memberBob.secretText().revealedBytes(), as: UTF8.self), "publicIdentity": memberBob.publicKey.text,
            ],
            "memberMallory": [
                "secretIdentity": String(decoding: memberMallory.secretText().revealedBytes(), as: UTF8.self),
                "publicIdentity": memberMallory.publicKey.text,
            ],
            "memberIdentityLabels":
                "a kit member's secret identity is Bech32m(\"coffer-secret\", 0x01 || BLAKE2b-256(\"coffer kit member <name> x25519\") || BLAKE2b-256(\"coffer kit member <name> ed25519\"))",
            "keyEpochOne": ["number": 1, "rekeyedBy": replicaB.hex, "rekeyedAt": t0, "encoded": Hex.encode(epochOne.encoded)],
            "vault": vault.hex, "createdAt": createdAt,
            "nonces":
                "payload nonce of write i of a case = BLAKE2b-192(\"<nonceLabel> payload <i>\"); stream header = BLAKE2b-192(streamHeaderLabel); BLAKE2b unkeyed",
            "expectations": [
                "success", "empty", "not a bundle", "truncated", "trailing data", "unsupported version", "malformed header",
                "authentication failure", "malformed record", "rule: NAME", "receiver rule: NAME", "payload rule: NAME",
                "payload authentication failure",
            ],
        ]
        return (cases, keys)
    }

    static func json(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]) + Data("\n".utf8)
    }

    // MARK: Reading a kit file the way the spec says

    /// What a member following docs/bundle-format.md §Format 5 reports for
    /// `bytes` with each kit identity whose key the file seals: the key
    /// found, its binding checked, and the stream read under it.
    static func memberOutcome(_ bytes: [UInt8]) -> String {
        do {
            let (h, _) = try BundleHeader.read(from: ByteArrayInput(bytes))
            var opened = 0
            for member in [memberAlice, memberBob] {
                guard let key = try h.openSealedKey(with: member) else { continue }
                opened += 1
                let input = ByteArrayInput(bytes)
                let (h2, p) = try BundleHeader.read(from: input)
                let r = try BundleReader(header: h2, prefix: p, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: key))
                while try r.next() != nil {}
            }
            return opened == 0 ? "not sealed to a kit member" : "success"
        } catch {
            if case .ruleBroken(let rule, _) = error { return "sealed key rule: \(rule.rawValue)" }
            return "\(error)"
        }
    }

    /// What a reader following docs/bundle-format.md reports for `bytes`,
    /// as one of the kit's expectation strings, and the decrypted versions
    /// of a valid file.
    static func outcome(_ bytes: [UInt8]) -> (String, [[String: Any]]) {
        var versions: [[String: Any]] = []
        do {
            let input = ByteArrayInput(bytes)
            let (h, p) = try BundleHeader.read(from: input)
            // The key of the header's epoch (a format-3 file is of epoch 1).
            let master = SecretBytes(copying: h.keyEpoch.isInitial ? masterKey : rekeyedMasterKey)
            let itemKey = KeyHierarchy.subKey(.itemPayload, of: master)
            let fieldIDKey = KeyHierarchy.subKey(.fieldID, of: master)
            let r = try BundleReader(header: h, prefix: p, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master))
            while let state = try r.next() {
                for rid in state.registers.keys.sorted() {
                    for v in state.registers[rid]! {
                        let ad = FieldVersion.associatedData(
                            vault: h.vaultID, item: state.id, register: rid, dot: v.dot, vector: v.vector, writtenAt: v.writtenAt,
                            isTombstone: v.isTombstone)
                        guard let plain = try? AEAD.open(v.payload, key: itemKey, associatedData: ad) else { return ("payload authentication failure", []) }
                        guard let payload = try? FieldPayload(decoding: plain) else { return ("malformed payload", []) }
                        do { try BundleValidation.check(payload: payload, version: v, register: rid, item: state.id, fieldIDKey: fieldIDKey) } catch {
                            if case .ruleBroken(let rule, _) = error { return ("payload rule: \(rule.rawValue)", []) }
                            return ("\(error)", [])
                        }
                        var w = writeJSON(
                            W(item: state.id, register: rid, dot: v.dot, vector: v.vector, writtenAt: v.writtenAt, tombstone: v.isTombstone, payload: payload),
                            index: 0)
                        w.removeValue(forKey: "nonceIndex")
                        versions.append(w)
                    }
                }
            }
            return ("success", versions)
        } catch {
            switch error {
            case .empty: return ("empty", [])
            case .notABundle: return ("not a bundle", [])
            case .unsupportedVersion: return ("unsupported version", [])
            case .truncated: return ("truncated", [])
            case .malformedHeader: return ("malformed header", [])
            case .authenticationFailed: return ("authentication failure", [])
            case .malformedRecord: return ("malformed record", [])
            case .trailingData: return ("trailing data", [])
            case .ruleBroken(let rule, _): return ("rule: \(rule.rawValue)", [])
            case .io(let why): return ("io: \(why)", [])
            }
        }
    }
}
