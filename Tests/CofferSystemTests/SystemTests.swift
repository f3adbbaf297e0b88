import CofferCrypto
import CofferSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Secret input")
struct SecretInputTests {
    func withFile(_ contents: [UInt8], _ body: (String) throws -> Void) rethrows {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-in-\(UUID())").path
        FileManager.default.createFile(atPath: path, contents: Data(contents))
        defer { unlink(path) }
        try body(path)
    }

    @Test(arguments: [
        ("pass\n", "pass"), ("pass", "pass"), ("pass\n\n", "pass\n"), ("pass\r\n", "pass"), ("\n", ""),
        ("two words \n", "two words "),
    ])
    func stripsExactlyOneTrailingNewline(input: String, expected: String) throws {
        try withFile(Array(input.utf8)) { path in
            let s = try SecretInput.read(path: path)
            #expect(s.revealedBytes() == Array(expected.utf8))
        }
    }

    @Test func missingFileAndBadDescriptor() {
        #expect(throws: SecretInputError.self) { try SecretInput.read(path: "/nonexistent/coffer") }
        #expect(throws: SecretInputError.self) { try SecretInput.read(fd: 987) }
    }

    @Test func tooLongIsRejected() throws {
        try withFile(Array(repeating: 65, count: SecretInput.maximumLength + 10)) { path in
            #expect(throws: SecretInputError.tooLong) { try SecretInput.read(path: path) }
        }
    }
}

@Suite("Process hardening")
struct HardeningTests {
    @Test func coreDumpsDisabled() {
        #expect(ProcessHardening.disableCoreDumps())
        #expect(ProcessHardening.coreDumpLimit == 0)
    }
}
