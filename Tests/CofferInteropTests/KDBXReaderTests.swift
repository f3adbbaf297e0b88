import CofferCrypto
import CofferInterop
import CofferKit
import Foundation
import Testing

/// The native KDBX reader on KeePassXC's and pykeepass's own test
/// databases (Tests/Fixtures/kdbx/README.md says where each comes from and
/// its password), and on damaged copies of them.
enum KDBXFixture {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/kdbx")
    static func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: dir.appendingPathComponent(name))) }
    static func pw(_ s: String) -> SecretBytes { SecretBytes(copying: Array(s.utf8)) }

    static func read(_ name: String, _ password: String?, key: String? = nil) throws -> ImportedFile {
        if let password {
            return try KDBX.read(path: path(name), password: pw(password), keyFile: key.map(path))
        }
        let keyBytes = try key.map { try KDBXKeyFile.load(path: path($0)) }
        return try KDBX.read(try bytes(name), file: name, password: nil, keyFile: keyBytes)
    }

    /// The error reading `bytes` gives; nil when it reads.
    static func failure(_ bytes: [UInt8], _ password: String, key: SecretBytes? = nil, limits: KDBX.Limits = KDBX.Limits()) -> CofferError? {
        do {
            _ = try KDBX.read(bytes, file: "db.kdbx", password: pw(password), keyFile: key, limits: limits)
            return nil
        } catch {
            return error
        }
    }
}

@Suite struct KDBXReaderTests {
    @Test func kdbx4WithAnInnerHeaderAttachment() throws {
        // KeePassXC's Format400.kdbx: KDBX 4.0, Argon2, attachment in the inner header.
        let r = try KDBXFixture.read("Format400.kdbx", "t")
        let e = try #require(r.entry("Format400"))
        #expect(e.value("username") == "Format400")
        #expect(e.value("Format400") == "Format400")
        // The attachment's name is taken by the custom string: it gets a 2.
        #expect(e.file("Format4002")?.bytes == Array("Format400\n".utf8))
    }

    @Test func kdbx31WithProtectedValues() throws {
        let r = try KDBXFixture.read("ProtectedStrings.kdbx", "masterpw")
        let e = try #require(r.entry("Sample Entry"))
        #expect(e.value("username") == "Protected User Name")
        #expect(e.value("password") == "ProtectedPassword" && e.isSecret("password") == true)
        #expect(e.value("TestProtected") == "ABC" && e.isSecret("TestProtected") == true)
        #expect(e.value("TestUnprotected") == "DEF" && e.isSecret("TestUnprotected") == false)
    }

    @Test func kdbx31NewDatabaseGroupsAndValues() throws {
        let r = try KDBXFixture.read("NewDatabase.kdbx", "a")
        let e = try #require(r.entry("Homebanking/Subgroup/Subgroup Entry"))
        #expect(e.value("username") == "Bank User Name")
        #expect(e.value("password") == "SecurePassword")
        #expect(e.value("url") == "https://www.bank.com")
        #expect(e.value("notes") == "Important note")
    }

    @Test func kdbx2WithAttachmentsAndHistory() throws {
        let r = try KDBXFixture.read("Format200.kdbx", "a")
        let e = try #require(r.entry("Sample Entry"))
        #expect(e.value("username") == "User Name")
        #expect(e.file("myattach.txt")?.bytes == Array("abcdefghijk".utf8))
        #expect(e.file("test.txt")?.bytes == Array("this is a test".utf8))
        #expect(e.history.count == 2)
    }

    @Test func kdbx3Format300AndCompressed() throws {
        #expect(try KDBXFixture.read("Format300.kdbx", "a").entry("Sample Entry") != nil)
        #expect(try KDBXFixture.read("Compressed.kdbx", "").entries.isEmpty == false)
    }

    @Test func nonASCIIPasswordAndValues() throws {
        let r = try KDBXFixture.read("NonAscii.kdbx", "\u{394}\u{F6}\u{636}")
        #expect(r.entry("秘密")?.value("password") == "🚗🐎🔋📎")
    }

    @Test func recycleBinEntriesAreLeftOut() throws {
        let r = try KDBXFixture.read("RecycleBinWithData.kdbx", "123")
        #expect(r.warnings.contains { $0.message.contains("recycle bin") })
    }

    @Test(arguments: ["FileKeyXml.key", "FileKeyXmlV2.keyx", "FileKeyHex.key", "FileKeyBinary.key", "FileKeyHashed.key"])
    func keyFileKinds(_ key: String) throws {
        let db = key.split(separator: ".").first.map { String($0) + ".kdbx" } ?? ""
        // These databases have a key file and no password.
        _ = try KDBXFixture.read(db, nil, key: key)
        // An empty password with the key file opens them too (KeePassXC's
        // --no-password): tried when the password is empty.
        _ = try KDBXFixture.read(db, "", key: key)
    }

    @Test func passwordAndKeyFile() throws {
        let r = try KDBXFixture.read("KeyFileProtected.kdbx", "a", key: "KeyFileProtected.key")
        #expect(Set(r.entries.map(\.name)).isSuperset(of: ["entry1", "entry2"]))
        let nopw = try KDBXFixture.read("KeyFileProtectedNoPassword.kdbx", nil, key: "KeyFileProtectedNoPassword.key")
        #expect(Set(nopw.entries.map(\.name)).isSuperset(of: ["entry1", "entry2"]))
    }

    @Test func aKeyFileWhoseHashFailsIsRefused() throws {
        let e = #expect(throws: CofferError.self) { try KDBXKeyFile.load(path: KDBXFixture.path("FileKeyXmlV2HashFail.keyx")) }
        #expect(e?.kind == .badData && e?.message.contains("does not match its Hash") == true)
    }

    @Test func wrongPasswordOrKeyFileIs77() throws {
        for (db, key) in [("Format400.kdbx", nil), ("NewDatabase.kdbx", nil), ("KeyFileProtected.kdbx", "FileKeyBinary.key")] as [(String, String?)] {
            let e = #expect(throws: CofferError.self) { try KDBXFixture.read(db, "wrong", key: key) }
            #expect(e?.kind == .wrongPassphrase && e?.exitCode == 77, "\(db)")
        }
        // The right password without the key file.
        let e = #expect(throws: CofferError.self) { try KDBXFixture.read("KeyFileProtected.kdbx", "a") }
        #expect(e?.exitCode == 77)
    }

    @Test func pykeepassDatabases() throws {
        let cases: [(String, String, String?)] = [
            ("pykeepass-test3.kdbx", "password", "pykeepass-test3.key"),
            ("pykeepass-test4.kdbx", "password", "pykeepass-test4.key"),
            ("pykeepass-test4_aes.kdbx", "password", "pykeepass-test4.key"),
            ("pykeepass-test4_aeskdf.kdbx", "password", "pykeepass-test4.key"),
            ("pykeepass-test4_chacha20.kdbx", "password", "pykeepass-test4.key"),
            ("pykeepass-test4_hex.kdbx", "password", "pykeepass-test4_hex.key"),
            ("pykeepass-test4_argon2id.kdbx", "password", nil),
            ("pykeepass-test4_aes_uncompressed.kdbx", "password", nil),
            ("pykeepass-test4_blankpass.kdbx", "", "pykeepass-test4.key"),
            ("pykeepass-test4_keyx.kdbx", "password", "pykeepass-test4_keyx.keyx"),
        ]
        for (db, pw, key) in cases {
            let r = try KDBXFixture.read(db, pw, key: key)
            // These two hold no entries (keepassxc-cli ls: [empty]).
            let empty = db.contains("argon2id") || db.contains("blankpass")
            #expect(r.entries.isEmpty == empty, "\(db)")
        }
        let r = try KDBXFixture.read("pykeepass-test4.kdbx", "password", key: "pykeepass-test4.key")
        #expect(r.entries.contains { $0.value("username") == "foobar_user" })
    }

    @Test func twofishIsRefusedByName() throws {
        let e = #expect(throws: CofferError.self) { try KDBXFixture.read("pykeepass-test4_twofish.kdbx", "password", key: "pykeepass-test4.key") }
        #expect(e?.exitCode == 65 && e?.message.contains("Twofish") == true)
    }

    @Test func aChangedHeaderIsCaught() throws {
        // KeePassXC's BrokenHeaderHash.kdbx: its protected stream key was changed.
        let e = #expect(throws: CofferError.self) { try KDBXFixture.read("BrokenHeaderHash.kdbx", "") }
        #expect(e?.exitCode == 65 && e?.message.contains("header") == true)
    }

    @Test func truncatedFilesFailCleanly() throws {
        for name in ["Format400.kdbx", "ProtectedStrings.kdbx"] {
            let full = try KDBXFixture.bytes(name)
            let pw = name == "Format400.kdbx" ? "t" : "masterpw"
            for cut in [0, 4, 11, 12, 40, 100, 200, full.count / 2, full.count - 40, full.count - 1] {
                let e = KDBXFixture.failure(Array(full.prefix(cut)), pw)
                #expect(e?.exitCode == 65, "\(name) cut at \(cut): \(String(describing: e))")
            }
        }
    }

    @Test func bitFlipsAreDamageNotWrongPassword() throws {
        let full = try KDBXFixture.bytes("Format400.kdbx")
        // In the header (its SHA-256 fails), in the header HMAC, in a block.
        let headerEnd = 300
        for at in [20, headerEnd + 40, full.count - 100, full.count - 10] where at < full.count {
            var b = full
            b[at] ^= 0x01
            let e = KDBXFixture.failure(b, "t")
            #expect(e != nil, "flip at \(at)")
            if let e { #expect(e.exitCode == 65 || e.exitCode == 77, "flip at \(at): \(e)") }
        }
        var block = full
        block[full.count - 60] ^= 0x80
        let e = KDBXFixture.failure(block, "t")
        #expect(e?.exitCode == 65 && e?.message.contains("HMAC") == true, "\(String(describing: e))")
    }

    @Test func notAKeePassFile() throws {
        let e = KDBXFixture.failure(Array("<KeePassFile/>".utf8), "x")
        #expect(e?.exitCode == 65 && e?.message.contains("not a KeePass database") == true)
    }
}
