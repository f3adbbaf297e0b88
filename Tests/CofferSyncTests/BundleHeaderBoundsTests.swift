import CofferCrypto
import CofferSync
import Testing

/// A bundle header is read, and its Argon2id parameters used, before it
/// can be authenticated: out-of-range costs must be refused up front, not
/// run for hours (found in review: iterations = 0x7fffffff hung `clone`).
@Suite("Bundle header KDF bounds")
struct BundleHeaderBoundsTests {
    func header(_ kdf: KDFParameters) -> BundleHeader {
        BundleHeader(
            vaultID: .random(), replicaID: .random(), kind: .full, createdAt: 0, recordCount: 0,
            kdf: kdf, salt: Array(repeating: 1, count: 16), wrappedMasterKey: Array(repeating: 2, count: 72),
            summary: VersionVector(), since: VersionVector())
    }

    @Test func acceptsSaneParameters() throws {
        let h = header(KDFParameters.default)
        #expect(try BundleHeader(decodingBody: h.encodedBody).kdf == .default)
    }

    @Test(arguments: [
        KDFParameters(memoryKiB: 65536, iterations: 0x7fff_ffff, parallelism: 1),
        KDFParameters(memoryKiB: 65536, iterations: 33, parallelism: 1),
        KDFParameters(memoryKiB: 8 * 1024 * 1024, iterations: 1, parallelism: 1),
        KDFParameters(memoryKiB: 65536, iterations: 1, parallelism: 0),
    ])
    func refusesOutOfRangeParameters(kdf: KDFParameters) {
        #expect(throws: BundleError.self) { try BundleHeader(decodingBody: header(kdf).encodedBody) }
    }
}
