import CofferCrypto
import CofferSync
import Foundation
import Testing

@testable import CofferKit

/// The committed bundle test vectors (docs/bundle-format.md §Test vectors)
/// and their generator. Everything is deterministic: fixed ids, keys,
/// salt, nonces and stream header. Regenerate with
/// `COFFER_REGENERATE_VECTORS=1 swift test --filter BundleVectorTests`.
enum BundleVectors {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/bundle")

    static let passphrase = "coffer test vector passphrase"
    static let kdf = KDFParameters(memoryKiB: 8192, iterations: 1, parallelism: 1)
    static let salt = Array("coffer-test-salt".utf8)  // 16 bytes
    static let masterKey = Array("YELLOW SUBMARINE, BLACK WIZARDRY".utf8)  // 32 bytes
    static let vault = VaultID(bytes: [UInt8](repeating: 0x11, count: 16))!
    static let replicaA = ReplicaID(bytes: [UInt8](repeating: 0xaa, count: 16))!
    static let replicaB = ReplicaID(bytes: [UInt8](repeating: 0xbb, count: 16))!
    static let createdAt: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z

    /// Deterministic "randomness": BLAKE2b of a label.
    static func fixed(_ label: String, _ n: Int) -> [UInt8] { KeyedHash.digest(Array(label.utf8), length: n) }

    static func item(_ n: UInt8) -> ItemID { ItemID(bytes: [UInt8](repeating: 0, count: 15) + [n])! }

    struct Write {
        var item: ItemID
        var register: RegisterID
        var dot: Dot
        var vector: VersionVector
        var writtenAt: Int64
        var tombstone: Bool
        var payload: FieldPayload
    }

    /// The writes the vectors hold: an API key, a note edited concurrently
    /// on two replicas (a conflict) and a deleted item.
    static func writes(fieldIDKey: SecretBytes) -> [Write] {
        let A = replicaA, B = replicaB
        func v(_ pairs: [ReplicaID: UInt64]) -> VersionVector { VersionVector(pairs) }
        func meta(_ name: String, _ value: String) -> FieldPayload { FieldPayload(name: name, value: Array(value.utf8), isSecret: false) }
        func field(_ i: ItemID, _ name: String) -> RegisterID { KeyHierarchy.registerID(field: name, item: i, fieldIDKey: fieldIDKey) }
        let i1 = item(1), i2 = item(2), i3 = item(3)
        let t = createdAt - 86_400_000
        return [
            Write(item: i1, register: .name, dot: Dot(replica: A, counter: 1), vector: v([A: 1]), writtenAt: t, tombstone: false, payload: meta("@name", "work/openai")),
            Write(item: i1, register: .type, dot: Dot(replica: A, counter: 1), vector: v([A: 1]), writtenAt: t, tombstone: false, payload: meta("@type", "api-key")),
            Write(item: i1, register: .tags, dot: Dot(replica: A, counter: 1), vector: v([A: 1]), writtenAt: t, tombstone: false, payload: meta("@tags", "ai\nwork")),
            Write(item: i1, register: .source, dot: Dot(replica: A, counter: 1), vector: v([A: 1]), writtenAt: t, tombstone: false, payload: meta("@source", "openai")),
            Write(item: i1, register: field(i1, "key"), dot: Dot(replica: A, counter: 1), vector: v([A: 1]), writtenAt: t, tombstone: false, payload: FieldPayload(name: "key", value: Array("sk-test-0123456789abcdef".utf8), isSecret: true)),
            Write(item: i2, register: .name, dot: Dot(replica: A, counter: 2), vector: v([A: 2]), writtenAt: t + 1000, tombstone: false, payload: meta("@name", "notes/plan")),
            Write(item: i2, register: .type, dot: Dot(replica: A, counter: 2), vector: v([A: 2]), writtenAt: t + 1000, tombstone: false, payload: meta("@type", "note")),
            Write(item: i2, register: field(i2, "notes"), dot: Dot(replica: A, counter: 3), vector: v([A: 3]), writtenAt: t + 3000, tombstone: false, payload: FieldPayload(name: "notes", value: Array("plan A, edited on replica aa".utf8), isSecret: true)),
            Write(item: i2, register: field(i2, "notes"), dot: Dot(replica: B, counter: 1), vector: v([A: 2, B: 1]), writtenAt: t + 2000, tombstone: false, payload: FieldPayload(name: "notes", value: Array("plan B, edited on replica bb".utf8), isSecret: true)),
            Write(item: i3, register: .name, dot: Dot(replica: A, counter: 4), vector: v([A: 4]), writtenAt: t + 4000, tombstone: false, payload: meta("@name", "old/key")),
            Write(item: i3, register: .type, dot: Dot(replica: A, counter: 4), vector: v([A: 4]), writtenAt: t + 4000, tombstone: false, payload: meta("@type", "api-key")),
            Write(item: i3, register: field(i3, "key"), dot: Dot(replica: A, counter: 4), vector: v([A: 4]), writtenAt: t + 4000, tombstone: false, payload: FieldPayload(name: "key", value: Array("sk-old".utf8), isSecret: true)),
            Write(item: i3, register: .deleted, dot: Dot(replica: A, counter: 5), vector: v([A: 5]), writtenAt: t + 5000, tombstone: false, payload: meta("@deleted", "1")),
        ]
    }

    struct Output {
        var files: [String: [UInt8]]
        var expected: [String: Any]
    }

    static func generate() throws -> Output {
        let pass = SecretBytes(copying: Array(passphrase.utf8))
        let master = SecretBytes(copying: masterKey)
        let kek = try Argon2id.deriveKey(passphrase: pass, salt: salt, parameters: kdf)
        let wrapped = AEAD.sealSecret(
            master, nonce: fixed("coffer vector wrap nonce", 24), key: kek,
            associatedData: KeyHierarchy.wrapAssociatedData(vault: vault, kdf: kdf, salt: salt))
        let itemKey = KeyHierarchy.subKey(.itemPayload, of: master)
        let bundleKey = KeyHierarchy.subKey(.bundle, of: master)
        let fieldIDKey = KeyHierarchy.subKey(.fieldID, of: master)
        var states: [ItemID: ItemState] = [:]
        var decoded: [[String: Any]] = []
        for (n, w) in writes(fieldIDKey: fieldIDKey).enumerated() {
            let ad = FieldVersion.associatedData(
                vault: vault, item: w.item, register: w.register, dot: w.dot, vector: w.vector, writtenAt: w.writtenAt,
                isTombstone: w.tombstone)
            let box = AEAD.seal(w.payload.encoded, nonce: fixed("coffer vector payload nonce \(n)", 24), key: itemKey, associatedData: ad)
            let fv = FieldVersion(dot: w.dot, vector: w.vector, writtenAt: w.writtenAt, isTombstone: w.tombstone, payload: box)
            states[w.item, default: ItemState(id: w.item)].registers[w.register, default: []].append(fv)
            decoded.append(versionJSON(item: w.item, register: w.register, fv, w.payload))
        }
        let summary = VersionVector([replicaA: 5, replicaB: 1])
        func bundle(kind: BundleHeader.Kind, since: VersionVector, label: String) throws -> [UInt8] {
            var selected: [ItemState] = []
            for id in states.keys.sorted() {
                var s = ItemState(id: id)
                for (rid, vs) in states[id]!.registers {
                    let keep = vs.filter { $0.dot.counter > since[$0.dot.replica] }
                    if !keep.isEmpty { s.registers[rid] = keep }
                }
                if !s.registers.isEmpty { selected.append(s) }
            }
            let header = BundleHeader(
                vaultID: vault, replicaID: replicaA, kind: kind, createdAt: createdAt, recordCount: UInt64(selected.count),
                kdf: kdf, salt: salt, wrappedMasterKey: wrapped, summary: summary, since: since)
            let out = ByteArrayOutput()
            let w = try BundleWriter(header: header, bundleKey: bundleKey, output: out, streamHeader: fixed("coffer vector stream header \(label)", 24))
            for s in selected { try w.write(s) }
            try w.finish()
            return out.bytes
        }
        let full = try bundle(kind: .full, since: VersionVector(), label: "full")
        let delta = try bundle(kind: .delta, since: VersionVector([replicaA: 3]), label: "delta")
        // Damaged variants, testkit style: each with the outcome a reader
        // must report.
        var flippedHeader = full
        flippedHeader[30] ^= 0x01  // inside the replica id: the first chunk fails
        var flippedLast = full
        flippedLast[full.count - 1] ^= 0x80  // last byte of the final chunk's MAC
        let noFinal = Array(full.prefix(firstChunkEnd(full)))  // only if more than one chunk…
        var newer = full
        newer[9] = 2
        var files: [String: [UInt8]] = [
            "bundle_full.cb": full,
            "bundle_delta.cb": delta,
            "bundle_header_bit_flipped.cb": flippedHeader,
            "bundle_final_chunk_bit_flipped.cb": flippedLast,
            "bundle_newer_version.cb": newer,
            "bundle_truncated_in_stream.cb": Array(full.prefix(full.count - 20)),
            "bundle_trailing_data.cb": full + [0],
        ]
        if noFinal.count < full.count { files["bundle_no_final_chunk.cb"] = noFinal }
        let hex = { (b: [UInt8]) in Hex.encode(b) }
        let expected: [String: Any] = [
            "passphrase": passphrase,
            "kdf": ["algorithm": "argon2id", "memoryKiB": kdf.memoryKiB, "iterations": kdf.iterations, "parallelism": kdf.parallelism],
            "salt": hex(salt),
            "masterKey": hex(masterKey),
            "itemKey": hex(itemKey.revealedBytes()),
            "bundleKey": hex(bundleKey.revealedBytes()),
            "fieldIDKey": hex(fieldIDKey.revealedBytes()),
            "vault": vault.hex,
            "exportingReplica": replicaA.hex,
            "createdAt": createdAt,
            "summary": [replicaA.hex: 5, replicaB.hex: 1],
            "versions": decoded,
            "vectors": [
                ["file": "bundle_full.cb", "expect": "success", "kind": "full", "since": [String: Int](), "records": 3, "blake2b256": hex(KeyedHash.digest(full))],
                ["file": "bundle_delta.cb", "expect": "success", "kind": "delta", "since": [replicaA.hex: 3], "records": 2, "blake2b256": hex(KeyedHash.digest(delta))],
                ["file": "bundle_header_bit_flipped.cb", "expect": "authentication failure"],
                ["file": "bundle_final_chunk_bit_flipped.cb", "expect": "authentication failure"],
                ["file": "bundle_newer_version.cb", "expect": "unsupported version"],
                ["file": "bundle_truncated_in_stream.cb", "expect": "truncated"],
                ["file": "bundle_trailing_data.cb", "expect": "trailing data"],
            ],
        ]
        return Output(files: files, expected: expected)
    }

    static func firstChunkEnd(_ b: [UInt8]) -> Int {
        let start = 14 + Int(UInt32(b[10]) << 24 | UInt32(b[11]) << 16 | UInt32(b[12]) << 8 | UInt32(b[13])) + 24
        let n = Int(UInt32(b[start]) << 24 | UInt32(b[start + 1]) << 16 | UInt32(b[start + 2]) << 8 | UInt32(b[start + 3]))
        return start + 4 + n
    }

    static func versionJSON(item: ItemID, register: RegisterID, _ v: FieldVersion, _ p: FieldPayload) -> [String: Any] {
        [
            "item": item.hex, "register": Hex.encode(register.bytes), "replica": v.dot.replica.hex, "counter": v.dot.counter,
            "vector": Dictionary(uniqueKeysWithValues: v.vector.entries.map { ($0.replica.hex, $0.counter) }),
            "writtenAt": v.writtenAt, "tombstone": v.isTombstone,
            "payload": ["name": p.name, "secret": p.isSecret, "value": p.text],
        ]
    }

    static func json(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]) + Data("\n".utf8)
    }
}

@Suite("bundles: committed test vectors", .serialized)
struct BundleVectorTests {
    @Test func generatorReproducesCommittedVectors() throws {
        let out = try BundleVectors.generate()
        let expectedJSON = try BundleVectors.json(out.expected)
        if ProcessInfo.processInfo.environment["COFFER_REGENERATE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: BundleVectors.dir, withIntermediateDirectories: true)
            for (name, bytes) in out.files { try Data(bytes).write(to: BundleVectors.dir.appendingPathComponent(name)) }
            try expectedJSON.write(to: BundleVectors.dir.appendingPathComponent("vectors.json"))
        }
        for (name, bytes) in out.files {
            let committed = try Data(contentsOf: BundleVectors.dir.appendingPathComponent(name))
            #expect(Array(committed) == bytes, "\(name) differs from the generator's output")
        }
        #expect(try Data(contentsOf: BundleVectors.dir.appendingPathComponent("vectors.json")) == expectedJSON)
    }

    /// Decodes the committed files the way the spec says a reader must,
    /// and compares every decrypted version with vectors.json.
    @Test(arguments: ["bundle_full.cb", "bundle_delta.cb"])
    func committedVectorDecodesToExpectedRecords(file: String) throws {
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: BundleVectors.dir.appendingPathComponent("vectors.json"))) as! [String: Any]
        let meta = (expected["vectors"] as! [[String: Any]]).first { $0["file"] as? String == file }!
        let bytes = Array(try Data(contentsOf: BundleVectors.dir.appendingPathComponent(file)))
        #expect(Hex.encode(KeyedHash.digest(bytes)) == meta["blake2b256"] as? String)
        let input = ByteArrayInput(bytes)
        let (header, prefix) = try BundleHeader.read(from: input)
        #expect(header.kind.name == meta["kind"] as? String)
        #expect(header.vaultID.hex == expected["vault"] as? String)
        #expect(header.recordCount == UInt64(meta["records"] as! Int))
        let since = (meta["since"] as! [String: Int]).map { (ReplicaID(hex: $0.key)!, UInt64($0.value)) }
        #expect(header.since == VersionVector(Dictionary(uniqueKeysWithValues: since)))
        let master = try KeyHierarchy.unwrapMasterKey(
            passphrase: SecretBytes(copying: Array((expected["passphrase"] as! String).utf8)), vault: header.vaultID,
            kdf: header.kdf, salt: header.salt, wrapped: header.wrappedMasterKey)
        #expect(Hex.encode(master.revealedBytes()) == expected["masterKey"] as? String)
        let reader = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master))
        let itemKey = KeyHierarchy.subKey(.itemPayload, of: master)
        var got: [String] = []
        while let state = try reader.next() {
            for rid in state.registers.keys.sorted() {
                for v in state.registers[rid]! {
                    let ad = FieldVersion.associatedData(
                        vault: header.vaultID, item: state.id, register: rid, dot: v.dot, vector: v.vector, writtenAt: v.writtenAt,
                        isTombstone: v.isTombstone)
                    let p = try FieldPayload(decoding: AEAD.open(v.payload, key: itemKey, associatedData: ad))
                    got.append(String(decoding: try BundleVectors.json(BundleVectors.versionJSON(item: state.id, register: rid, v, p)), as: UTF8.self))
                }
            }
        }
        let sinceVector = header.since
        let want = (expected["versions"] as! [[String: Any]])
            .filter { UInt64($0["counter"] as! Int) > sinceVector[ReplicaID(hex: $0["replica"] as! String)!] }
            .map { String(decoding: try! BundleVectors.json($0), as: UTF8.self) }
        #expect(got.sorted() == want.sorted())
        #expect(got.count == want.count)
    }

    @Test func damagedVectorsFailAsExpected() throws {
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: BundleVectors.dir.appendingPathComponent("vectors.json"))) as! [String: Any]
        let master = SecretBytes(copying: Hex.decode(expected["masterKey"] as! String)!)
        for meta in expected["vectors"] as! [[String: Any]] {
            let file = meta["file"] as! String
            let outcome = meta["expect"] as! String
            let input = ByteArrayInput(Array(try Data(contentsOf: BundleVectors.dir.appendingPathComponent(file))))
            var result = "success"
            do {
                let (h, p) = try BundleHeader.read(from: input)
                let r = try BundleReader(header: h, prefix: p, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master))
                while try r.next() != nil {}
            } catch {
                switch error {
                case .authenticationFailed: result = "authentication failure"
                case .unsupportedVersion: result = "unsupported version"
                case .trailingData: result = "trailing data"
                case .truncated: result = "truncated"
                default: result = "\(error)"
                }
            }
            #expect(result == outcome, "\(file)")
        }
    }

    /// The full vector is a real vault's bundle: clone it and read items.
    @Test func fullVectorClonesIntoAWorkingVault() throws {
        let box = BundleSandbox()
        let pass = SecretBytes(copying: Array(BundleVectors.passphrase.utf8))
        let r = try Vault.clone(bundleAt: BundleVectors.dir.appendingPathComponent("bundle_full.cb").path, to: box.path("v.coffer"), passphrase: pass)
        #expect(r.added == 3 && r.conflictsOpened == 1)
        let v = try VaultFile.open(path: box.path("v.coffer")).unlock(passphrase: pass)
        #expect(try v.list().map(\.name) == ["notes/plan", "work/openai"])
        let key = try v.item(named: "work/openai")
        #expect(key.field("key")?.value == "sk-test-0123456789abcdef")
        #expect(key.tags == ["ai", "work"] && key.source == "openai")
        let plan = try v.item(named: "notes/plan")
        #expect(plan.field("notes")?.value == "plan A, edited on replica aa")  // the later write is shown
        #expect(plan.conflicts.first?.sides.count == 2)
        #expect(try !v.contains("old/key"))
    }
}
