import CofferCrypto
import CofferKit
import Foundation
import Testing

@testable import CofferInterop

/// Coffer's KDBX 4 writer read back by the native reader, and the reader
/// on files built to lie (an inner header claiming a huge attachment, a
/// gzip bomb). KeePassXC and pykeepass reading the writer's files are in
/// Tests/CofferCLITests/KDBXInteropTests.swift.
@Suite struct KDBXWriterTests {
    static let fast = KDBXWriter.Parameters(memoryBytes: 1 << 20, iterations: 1, parallelism: 1)
    static let pw = SecretBytes(copying: Array("export pw".utf8))

    static func entries() -> [InterchangeEntry] {
        var login = InterchangeEntry(name: "Work/Cloud ☁/AWS", type: .login, tags: ["aws", "prod"], expires: Day(Date(timeIntervalSince1970: 1_900_000_000)))
        login.fields = [
            Field(name: "username", value: "alice", isSecret: false),
            Field(name: "password", value: "pä$$<&>\"word", isSecret: true),
            Field(name: "url", value: "https://aws.example", isSecret: false),
            Field(name: "notes", value: "line 1\nline 2", isSecret: false),
            Field(name: "totp", value: "otpauth://totp/AWS?secret=JBSWY3DPEHPK3PXP", isSecret: true),
            Field(name: "recovery", value: "rc-1", isSecret: true),
            Field(name: "region", value: "eu-west-1", isSecret: false),
            Field(name: "Title", value: "a field named Title", isSecret: false),
            Field(name: "id.bin", bytes: (0..<3000).map { UInt8($0 % 251) }, isSecret: true, isFile: true),
        ]
        login.history = [
            InterchangeVersion(
                fields: [Field(name: "username", value: "alice", isSecret: false), Field(name: "password", value: "old-1", isSecret: true)],
                writtenAt: Date(timeIntervalSince1970: 1_700_000_000)),
            InterchangeVersion(
                fields: [Field(name: "username", value: "alice", isSecret: false), Field(name: "password", value: "old-2", isSecret: true)],
                writtenAt: Date(timeIntervalSince1970: 1_700_100_000)),
        ]
        let api = InterchangeEntry(name: "api/stripe", type: .apiKey, fields: [Field(name: "key", value: "sk_live_123", isSecret: true)])
        let both = InterchangeEntry(
            name: "api/mail", type: .apiKeyWithEmail,
            fields: [Field(name: "key", value: "k-9", isSecret: true), Field(name: "email", value: "ops@example.com", isSecret: false)])
        let email = InterchangeEntry(name: "me", type: .email, fields: [Field(name: "email", value: "me@example.com", isSecret: false)])
        let note = InterchangeEntry(name: "diary", type: .note, fields: [Field(name: "notes", value: "secret note", isSecret: true)])
        let custom = InterchangeEntry(name: "env/prod", type: .custom, fields: [Field(name: "DATABASE_URL", value: "postgres://x", isSecret: true)])
        return [login, api, both, email, note, custom]
    }

    @Test func everythingComesBack() throws {
        let bytes = try KDBXWriter.write(Self.entries(), password: Self.pw, parameters: Self.fast)
        // KDBX 4.0, ChaCha20.
        #expect(Array(bytes[8..<12]) == [0, 0, 4, 0])
        let r = try KDBX.read(bytes, file: "out.kdbx", password: Self.pw, keyFile: nil)
        #expect(r.entries.count == 6)
        let aws = try #require(r.entry("Work/Cloud ☁/AWS"))
        #expect(aws.value("username") == "alice")
        #expect(aws.value("password") == "pä$$<&>\"word" && aws.isSecret("password") == true)
        #expect(aws.value("url") == "https://aws.example")
        #expect(aws.value("notes") == "line 1\nline 2")
        #expect(aws.value("totp") == "otpauth://totp/AWS?secret=JBSWY3DPEHPK3PXP")
        #expect(aws.value("recovery") == "rc-1" && aws.isSecret("recovery") == true)
        #expect(aws.value("region") == "eu-west-1" && aws.isSecret("region") == false)
        // KeePass's own Title is the entry's name: the field gets a suffix.
        #expect(aws.value("Title (coffer)") == "a field named Title")
        #expect(aws.file("id.bin")?.bytes == (0..<3000).map { UInt8($0 % 251) })
        #expect(aws.tags == ["aws", "prod"])
        #expect(aws.expires == Day(Date(timeIntervalSince1970: 1_900_000_000)))
        #expect(aws.history.map { $0.fields.first { $0.name == "password" }?.value } == ["old-1", "old-2"])
        #expect(aws.history.first?.writtenAt == Date(timeIntervalSince1970: 1_700_000_000))

        let api = try #require(r.entry("api/stripe"))
        #expect(api.type == .apiKey && api.value("key") == "sk_live_123" && api.fields.count == 1)
        let both = try #require(r.entry("api/mail"))
        #expect(both.type == .apiKeyWithEmail && both.value("key") == "k-9" && both.value("email") == "ops@example.com")
        #expect(r.entry("me")?.type == .email && r.entry("me")?.value("email") == "me@example.com")
        #expect(r.entry("diary")?.value("notes") == "secret note")
        #expect(r.entry("env/prod")?.value("DATABASE_URL") == "postgres://x")
    }

    @Test func theKeyIsTheEntrysPassword() throws {
        let bytes = try KDBXWriter.write(Self.entries(), password: Self.pw, parameters: Self.fast)
        let inner = try KDBX.decrypt(bytes, file: "x", password: Self.pw, keyFile: nil, limits: KDBX.Limits())
        // Without the CofferType mapping, the reader sees KeePass's own view.
        let plain = try KeePassXML.read(
            stream: BytesInputStream(inner.xml), file: "x", pool: ["0": .bytes(inner.binaries[0])],
            unprotect: { t in
                guard var d = Data(base64Encoded: t).map({ [UInt8]($0) }) else { return nil }
                inner.stream?.apply(&d)
                return d
            })
        #expect(plain.entry("api/stripe")?.value("password") == "sk_live_123")
        #expect(plain.entry("api/stripe")?.value("CofferType") == "api-key")
    }

    @Test func aWrongPasswordIs77() throws {
        let bytes = try KDBXWriter.write(Self.entries(), password: Self.pw, parameters: Self.fast)
        let e = KDBXFixture.failure(bytes, "not it")
        #expect(e?.exitCode == 77)
    }

    @Test func anInnerHeaderClaimingAHugeBinaryIsRefused() throws {
        var payload: [UInt8] = [3] + KDBX.le(0x7FFF_FFFF, 4) + [1, 2, 3]
        let bytes = try KDBXWriter.seal(&payload, password: Self.pw, parameters: Self.fast)
        let e = KDBXFixture.failure(bytes, "export pw")
        #expect(e?.exitCode == 65 && e?.message.contains("inner header field 3 claims 2147483647 bytes") == true, "\(String(describing: e))")
        // A negative size too.
        var negative: [UInt8] = [3] + KDBX.le(0xFFFF_FFF0, 4) + [1]
        let b2 = try KDBXWriter.seal(&negative, password: Self.pw, parameters: Self.fast)
        #expect(KDBXFixture.failure(b2, "export pw")?.exitCode == 65)
    }

    @Test func aGzipBombStopsAtTheLimit() throws {
        var payload: [UInt8] = [0] + KDBX.le(0, 4) + Array("<KeePassFile><Root>".utf8) + [UInt8](repeating: 0x20, count: 8 << 20)
        let bytes = try KDBXWriter.seal(&payload, password: Self.pw, parameters: Self.fast)
        #expect(bytes.count < 100_000)
        var limits = KDBX.Limits()
        limits.xmlBytes = 1 << 20
        let e = KDBXFixture.failure(bytes, "export pw", limits: limits)
        #expect(e?.exitCode == 65 && e?.message.contains("gzip bomb") == true, "\(String(describing: e))")
    }

    @Test func anAbsurdKeyDerivationIsRefusedBeforeItRuns() throws {
        var payload: [UInt8] = [0] + KDBX.le(0, 4) + Array("<KeePassFile><Root></Root></KeePassFile>".utf8)
        var bytes = try KDBXWriter.seal(&payload, password: Self.pw, parameters: Self.fast)
        // The KDF dictionary's "M" (UInt64): ask for 1 TiB, then give the
        // header a matching SHA-256 so that only the limit can refuse it.
        let marker: [UInt8] = [0x05, 1, 0, 0, 0, UInt8(ascii: "M"), 8, 0, 0, 0]
        let at = try #require((0..<bytes.count - marker.count).first { Array(bytes[$0..<$0 + marker.count]) == marker }) + marker.count
        bytes.replaceSubrange(at..<at + 8, with: KDBX.le(1 << 40, 8))
        let end = try KDBX.header(bytes, major: 4, file: "x").end
        bytes.replaceSubrange(end..<end + 32, with: KDBXCrypto.sha256(Array(bytes[0..<end])))
        let e = KDBXFixture.failure(bytes, "export pw")
        #expect(e?.exitCode == 65 && e?.message.contains("above what coffer allows") == true, "\(String(describing: e))")
    }

    @Test func kdbx31TruncatedOnABlockBoundaryIsDamageNotAWrongPassword() throws {
        let full = try KDBXFixture.bytes("ProtectedStrings.kdbx")
        let end = try KDBX.header(full, major: 3, file: "x").end
        for cut in [end + 48, end + 64, full.count - 16, full.count - 32] {
            let e = KDBXFixture.failure(Array(full.prefix(cut)), "masterpw")
            #expect(e?.exitCode == 65, "cut at \(cut): \(String(describing: e))")
        }
    }

    @Test func damagedGzipAndXMLAreNamed() throws {
        var notGzip: [UInt8] = Array("plain".utf8)
        // Sealed without compression but flagged as gzip: build it by hand.
        let raw = try KDBXWriter.seal(&notGzip, password: Self.pw, parameters: Self.fast, gzip: false)
        // Uncompressed: the payload "plain" is an inner header field 0x70 cut short.
        #expect(KDBXFixture.failure(raw, "export pw")?.message.contains("inner header") == true)
        var badXML: [UInt8] = [0] + KDBX.le(0, 4) + Array("<KeePassFile><Root><Group>".utf8)
        let b = try KDBXWriter.seal(&badXML, password: Self.pw, parameters: Self.fast)
        let e = KDBXFixture.failure(b, "export pw")
        #expect(e?.exitCode == 65, "\(String(describing: e))")
    }
}
