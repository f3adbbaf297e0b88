import CofferInterop
import CofferKit
import Foundation
import Testing

/// KeePass attachments (`<Binary>`) become binary fields
/// (docs/import-export.md#keepass-xml): from the pool in `<Meta><Binaries>`
/// (gzip when `Compressed="True"`) or inline; too large ones are named in a
/// warning; bad data refuses the whole file, naming the entry.
@Suite struct KeePassAttachmentTests {
    /// A KeePass XML file: `pool` inside `<Meta><Binaries>`, one entry
    /// "Top" in group "G" with a password and `binaries` (and `history`).
    static func xml(pool: String, binaries: String, history: String = "") -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Meta><Binaries>\(pool)</Binaries></Meta><Root><Group><Name>Root</Name><Group><Name>G</Name>
            <Entry><String><Key>Title</Key><Value>Top</Value></String><String><Key>Password</Key><Value ProtectInMemory="True">pw</Value></String>
            \(binaries)
            <History>\(history)</History>
            </Entry></Group></Group></Root></KeePassFile>
            """.utf8)
    }

    static func ref(_ key: String, _ id: Int) -> String { "<Binary><Key>\(key)</Key><Value Ref=\"\(id)\"/></Binary>" }

    /// gzip of `bytes`, made by the system's gzip program.
    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-gz-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["gzip", "-c", "-n", input.path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return [UInt8](data)
    }

    static func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    func file(_ e: InterchangeEntry, _ name: String) -> Field? { e.fields.first { $0.name == name && $0.isFile } }

    @Test func poolInlineAndHistoryAttachmentsBecomeBinaryFields() throws {
        let bin: [UInt8] = [0, 1, 2, 0xFF, 0xFE, 10, 13]
        let pool = """
            <Binary ID="0" Compressed="True">\(Self.b64(try Self.gzip(bin)))</Binary>
            <Binary ID="1">\(Self.b64(Array("raw text\n".utf8)))</Binary>
            <Binary ID="2" Compressed="False">\n  \(Self.b64([9, 8, 7]))\n</Binary>
            """
        let binaries =
            Self.ref("id.bin", 0) + Self.ref("password", 1) + Self.ref("ws", 2)
            + "<Binary><Key>inline.txt</Key><Value>\(Self.b64(Array("inline!".utf8)))</Value></Binary>"
            + "<Binary><Key>empty</Key><Value></Value></Binary>"
        let history =
            "<Entry><String><Key>Title</Key><Value>Top</Value></String><String><Key>Password</Key><Value>old</Value></String>\(Self.ref("old.bin", 1))</Entry>"
        let r = try KeePassXML.read(Self.xml(pool: pool, binaries: binaries, history: history), file: "k.xml")
        let top = try #require(r.entry("G/Top"))
        #expect(file(top, "id.bin") == Field(name: "id.bin", bytes: bin, isSecret: true, isFile: true))
        // A name a string already has gets a number, like other fields.
        #expect(top.value("password") == "pw" && file(top, "password2")?.bytes == Array("raw text\n".utf8))
        #expect(file(top, "ws")?.bytes == [9, 8, 7])
        #expect(file(top, "inline.txt")?.bytes == Array("inline!".utf8))
        #expect(file(top, "empty")?.bytes == [])
        #expect(r.warnings.isEmpty, "\(r.warnings)")
        let old = try #require(top.history.first)
        #expect(old.fields.contains(Field(name: "old.bin", bytes: Array("raw text\n".utf8), isSecret: true, isFile: true)))
        #expect(old.fields.contains(Field(name: "password", value: "old", isSecret: true)))
    }

    @Test func tooLargeAttachmentsAreNamedInAWarningAndLeftOut() throws {
        let max = Field.maxValueBytes
        let bomb = try Self.gzip([UInt8](repeating: 0, count: max + 4096))
        #expect(bomb.count < 100_000)
        let fifteen = [UInt8](repeating: 0x41, count: 15 * 1024 * 1024)
        let pool = """
            <Binary ID="0">\(Self.b64([UInt8](repeating: 7, count: max + 1)))</Binary>
            <Binary ID="1" Compressed="True">\(Self.b64(bomb))</Binary>
            <Binary ID="2">\(String(repeating: "QUFB", count: 6_000_000))</Binary>
            <Binary ID="3">\(Self.b64(fifteen))</Binary>
            <Binary ID="4">\(Self.b64([1, 2, 3]))</Binary>
            """
        let binaries =
            Self.ref("big.raw", 0) + Self.ref("bomb.gz", 1) + Self.ref("huge.txt", 2)
            + Self.ref("a15", 3) + Self.ref("b15", 3) + Self.ref("small", 4)
        let r = try KeePassXML.read(Self.xml(pool: pool, binaries: binaries, history: "<Entry>\(Self.ref("big.raw", 0))</Entry>"), file: "k.xml")
        let top = try #require(r.entry("G/Top"))
        #expect(file(top, "a15")?.bytes.count == fifteen.count)
        #expect(file(top, "small")?.bytes == [1, 2, 3])
        for name in ["big.raw", "bomb.gz", "huge.txt", "b15"] { #expect(file(top, name) == nil, "\(name)") }
        // One warning per attachment, naming entry and attachment, never content.
        #expect(r.warnings.count == 4, "\(r.warnings)")
        for name in ["big.raw", "bomb.gz", "huge.txt"] {
            #expect(r.warnings.contains { $0.entry == "G/Top" && $0.message.contains("attachment '\(name)'") && $0.message.contains("16 MiB") }, "\(name)")
        }
        #expect(r.warnings.contains { $0.entry == "G/Top" && $0.message.contains("attachment 'b15'") && $0.message.contains("28 MiB") })
        #expect(!r.warnings.contains { $0.message.contains("QUFB") || $0.message.contains("AAAA") })
    }

    @Test(arguments: [
        ("not base64", "<Binary ID=\"0\">%%%not base64%%%</Binary>", "not valid base64"),
        ("not gzip", "<Binary ID=\"0\" Compressed=\"True\">\(b64(Array("plain, not gzip".utf8)))</Binary>", "not valid gzip"),
    ])
    func badAttachmentDataRefusesTheFileNamingTheEntry(_ what: String, pool: String, message: String) {
        do {
            _ = try KeePassXML.read(Self.xml(pool: pool, binaries: Self.ref("key.pem", 0)), file: "k.xml")
            Issue.record("accepted \(what)")
        } catch {
            #expect(error.kind == .badData)
            #expect(error.message.hasPrefix("k.xml: line 3 (entry 'G/Top'): attachment 'key.pem': "), "\(error.message)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test func truncatedAndCorruptedGzipAreRefused() throws {
        let gz = try Self.gzip(Array(String(repeating: "coffer attachment ", count: 500).utf8))
        var corrupted = gz
        corrupted[gz.count - 6] ^= 0x55 // the CRC-32 in the trailer
        for bad in [Array(gz.prefix(gz.count / 2)), corrupted, gz + [0]] {
            let pool = "<Binary ID=\"0\" Compressed=\"True\">\(Self.b64(bad))</Binary>"
            #expect(throws: CofferError.self) { try KeePassXML.read(Self.xml(pool: pool, binaries: Self.ref("k", 0)), file: "k.xml") }
        }
    }
}
