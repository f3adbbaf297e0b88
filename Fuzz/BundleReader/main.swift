// libFuzzer target on the bundle reader (docs/reliability.md, "Fuzzing").
// Built by scripts/fuzz.sh with `swiftc -sanitize=fuzzer` from the sources
// of CofferCrypto and CofferSync (SwiftPM renames an executable's entry
// point, which libFuzzer's main cannot call). Any trap, crash or leak of a
// signal is a finding: the reader must turn every input into a
// `BundleError`.
//
// The first byte picks what the rest is:
//   0  a bundle file, read with the test kit's bundle key (most inputs die
//      at authentication: this covers the clear header and framing);
//   1  the plaintext of a bundle's stream: encrypted under the kit's key
//      and header before reading, so the record decoder and the
//      validation rules see every mutation;
//   2  a summary file;
//   3  a field payload.
import CofferCrypto
import CofferSync

let masterKey = SecretBytes(copying: Array("YELLOW SUBMARINE, BLACK WIZARDRY".utf8))
let bundleKey = KeyHierarchy.subKey(.bundle, of: masterKey)
let fieldIDKey = KeyHierarchy.subKey(.fieldID, of: masterKey)
let replica = ReplicaID(bytes: [UInt8](repeating: 0xaa, count: 16))!
let header = BundleHeader(
    vaultID: VaultID(bytes: [UInt8](repeating: 0x11, count: 16))!, replicaID: replica, kind: .full,
    createdAt: 1_767_225_600_000, recordCount: nil, kdf: KDFParameters(memoryKiB: 8192, iterations: 1, parallelism: 1),
    salt: [UInt8](repeating: 1, count: 16), wrappedMasterKey: [UInt8](repeating: 2, count: 72),
    summary: VersionVector([replica: 1 << 20, ReplicaID(bytes: [UInt8](repeating: 0xbb, count: 16))!: 1 << 20]),
    since: VersionVector())

func readAll(_ bytes: [UInt8]) {
    let input = ByteArrayInput(bytes)
    guard let (h, p) = try? BundleHeader.read(from: input) else { return }
    guard let r = try? BundleReader(header: h, prefix: p, input: input, bundleKey: bundleKey) else { return }
    while let s = try? r.next() {
        _ = s.isDeleted
        _ = s.hasDeleteConflict
        for (_, versions) in s.registers { _ = Register.shown(Register.normalize(versions)) }
    }
    _ = BundleValidation.backedSummary(header: h, evidence: r.evidence)
}

func wrap(_ plaintext: [UInt8]) -> [UInt8] {
    let prefix = header.encoded
    let stream = SecretStream.Writer(key: bundleKey, deterministicHeader: [UInt8](repeating: 7, count: 24))
    var out = prefix + stream.header
    var i = 0
    repeat {
        let end = min(i + BundleFormat.chunkSize, plaintext.count)
        let ct = stream.push(Array(plaintext[i..<end]), tag: end == plaintext.count ? .final : .message, associatedData: i == 0 ? prefix : [])
        var w = ByteWriter()
        w.u32(UInt32(ct.count))
        w.bytes(ct)
        out += w.data
        i = end
    } while i < plaintext.count
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0: readAll(rest)
    case 1: readAll(wrap(rest))
    case 2: _ = try? BundleSummaryFile(decoding: rest)
    default:
        if let p = try? FieldPayload(decoding: rest) {
            let v = FieldVersion(dot: Dot(replica: replica, counter: 1), vector: VersionVector([replica: 1]), writtenAt: 0, isTombstone: rest.count % 2 == 0, payload: [])
            let item = ItemID(bytes: [UInt8](repeating: 3, count: 16))!
            let rid = RegisterID(bytes: rest.count >= 16 ? Array(rest.prefix(16)) : [UInt8](repeating: 0, count: 16))!
            _ = try? BundleValidation.check(payload: p, version: v, register: rid, item: item, fieldIDKey: fieldIDKey)
        }
    }
    return 0
}
