import CofferCrypto
import CofferStore
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

@Suite("TOTP (RFC 6238) and base32")
struct TOTPTests {
    // RFC 6238 Appendix B: the seeds are the ASCII strings below, 8 digits, 30 s.
    static let sha1Seed = Array("12345678901234567890".utf8)
    static let sha256Seed = Array("12345678901234567890123456789012".utf8)
    static let sha512Seed = Array("1234567890123456789012345678901234567890123456789012345678901234".utf8)

    static let vectors: [(Int64, String, String, String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ]

    @Test func appendixBVectors() {
        for (t, sha1, sha256, sha512) in Self.vectors {
            #expect(TOTP(secret: Self.sha1Seed, algorithm: .sha1, digits: 8).code(at: t) == sha1, "SHA1 at \(t)")
            #expect(TOTP(secret: Self.sha256Seed, algorithm: .sha256, digits: 8).code(at: t) == sha256, "SHA256 at \(t)")
            #expect(TOTP(secret: Self.sha512Seed, algorithm: .sha512, digits: 8).code(at: t) == sha512, "SHA512 at \(t)")
        }
    }

    @Test func sixDigitsAreTheLastSix() {
        #expect(TOTP(secret: Self.sha1Seed).code(at: 59) == "287082")
        #expect(TOTP(secret: Self.sha1Seed, digits: 7).code(at: 1_111_111_109) == "7081804")
    }

    @Test func parsesOtpauthURIs() throws {
        let b32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
        let t = try TOTP.parse("otpauth://totp/ACME%20Co:john@example.com?secret=\(b32)&issuer=ACME%20Co&algorithm=SHA256&digits=8&period=60")
        #expect(t.secret == Self.sha1Seed)
        #expect(t.algorithm == .sha256)
        #expect(t.digits == 8)
        #expect(t.period == 60)
        #expect(t.issuer == "ACME Co")
        #expect(t.account == "john@example.com")
        // Bare secrets: lower case, spaces and missing padding are fine.
        #expect(try TOTP.parse("gezd gnbv gy3t qojq gezd gnbv gy3t qojq").secret == Self.sha1Seed)
        #expect(try TOTP.parse("JBSWY3DPEHPK3PXP").secret == Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF])
        #expect(TOTP(secret: [], period: 30).secondsRemaining(at: 59) == 1)
        #expect(TOTP(secret: [], period: 30).secondsRemaining(at: 60) == 30)
    }

    @Test func badInputNamesThePart() {
        func message(_ text: String) -> String? {
            do {
                _ = try TOTP.parse(text)
                return nil
            } catch {
                #expect(error.kind == .badData)
                #expect(error.exitCode == 65)
                return error.message
            }
        }
        #expect(message("otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=1")?.contains("type") == true)
        #expect(message("otpauth://totp/x?issuer=a")?.contains("no secret parameter") == true)
        #expect(message("otpauth://totp/x?secret=JBSW1Y3D")?.contains("secret parameter is not base32: character 5") == true)
        #expect(message("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=9")?.contains("digits parameter") == true)
        #expect(message("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=MD5")?.contains("algorithm parameter") == true)
        #expect(message("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=0")?.contains("period parameter") == true)
        #expect(message("not base32!")?.contains("TOTP secret is not base32") == true)
        #expect(message("ABC")?.contains("a length no base32 encoding has") == true)
        #expect(message("")?.contains("empty") == true)
        // The secret never appears in a message.
        #expect(message("otpauth://totp/x?secret=SECRETSECRET1")?.contains("SECRETSECRET") == false)
    }
}

@Suite("password generator")
struct PasswordGeneratorTests {
    @Test func charactersComeFromTheClassesAndEachClassAppears() throws {
        for _ in 0..<200 {
            let g = try PasswordGenerator.generate(.characters(length: 4, classes: [.lower, .upper, .digits, .symbols], noAmbiguous: false))
            #expect(g.secret.count == 4)
            let chars = Array(g.secret)
            #expect(chars.contains { $0.isLowercase })
            #expect(chars.contains { $0.isUppercase })
            #expect(chars.contains { $0.isNumber })
            #expect(chars.contains { PasswordGenerator.CharacterClass.symbols.characters.contains($0) })
        }
        let g = try PasswordGenerator.generate(.characters(length: 500, classes: [.lower, .digits], noAmbiguous: true))
        let ok = g.secret.allSatisfy { ($0.isLowercase || $0.isNumber) && !PasswordGenerator.ambiguous.contains($0) }
        #expect(ok)
    }

    @Test func uniformEnoughAcrossTheAlphabet() throws {
        // 10 digits × 20,000 draws: every digit near 10% (a biased modulo
        // or a stuck generator would fail this by far).
        let g = try PasswordGenerator.generate(.characters(length: 4096, classes: [.digits], noAmbiguous: false))
        var counts: [Character: Int] = [:]
        for c in g.secret { counts[c, default: 0] += 1 }
        #expect(counts.count == 10)
        for (_, n) in counts { #expect((290...530).contains(n), "digit count \(n) of 4096") }
    }

    @Test func entropyIsExact() throws {
        // One class: length × log2(size).
        #expect(abs(PasswordGenerator.entropy(length: 10, classSizes: [10]) - 10 * log2(10)) < 1e-9)
        // Two classes of 1 character, length 2: only "ab" and "ba" qualify.
        #expect(abs(PasswordGenerator.entropy(length: 2, classSizes: [1, 1]) - 1) < 1e-9)
        // Default: 25 characters of 94, all four classes: just under 25 × log2(94).
        let e = try PasswordGenerator.generate(.standard).entropyBits
        #expect(e > 163 && e < 25 * log2(94))
    }

    @Test func wordsFromTheEFFList() throws {
        let list = try Wordlist.eff()
        #expect(list.count == 7776)
        #expect(list.first == "abacus")
        #expect(list.last == "zoom")
        #expect(Set(list).count == 7776)
        let g = try PasswordGenerator.generate(.words(count: 6, separator: " "))
        let words = g.secret.split(separator: " ").map(String.init)
        #expect(words.count == 6)
        let known = Set(list)
        #expect(words.allSatisfy { known.contains($0) })
        #expect(abs(g.entropyBits - 6 * log2(7776)) < 1e-9)
    }

    @Test func badRecipesAreUsageErrors() throws {
        for r: PasswordGenerator.Recipe in [
            .characters(length: 0, classes: [.lower], noAmbiguous: false),
            .characters(length: 4097, classes: [.lower], noAmbiguous: false),
            .characters(length: 2, classes: [.lower, .upper, .digits], noAmbiguous: false),
            .words(count: 0, separator: "-"),
            .words(count: 3, separator: "\n"),
        ] {
            #expect(throws: CofferError.self) { try PasswordGenerator.generate(r) }
        }
        #expect(throws: CofferError.self) { try PasswordGenerator.parseClasses("lower,emoji") }
        #expect(try PasswordGenerator.parseClasses("digits,lower,digits") == [.digits, .lower])
    }
}

@Suite("editor document format")
struct EditorDocumentTests {
    static func login() -> Item {
        Item(
            id: .random(), name: "github", type: .login,
            fields: [
                Field(name: "username", value: "octo", isSecret: false),
                Field(name: "password", value: "hunter2", isSecret: true),
                Field(name: "url", value: "https://github.com", isSecret: false),
                Field(name: "notes", value: "line one\nline two", isSecret: true),
                Field(name: "key.pem", bytes: [0, 1, 2, 255], isSecret: true, isFile: true),
            ],
            tags: [], source: nil, expires: nil, policy: .sync, env: [:], createdAt: Date(), updatedAt: Date(),
            vector: .init(), conflicts: [], hasDeleteConflict: false)
    }

    @Test func rendersMainSecretThenFieldsThenNotes() throws {
        let text = try EditorDocument.render(Self.login())
        #expect(text == "hunter2\nusername: octo\nurl: https://github.com\n\nline one\nline two\n")
        // Unchanged text: no change at all.
        #expect(try EditorDocument.changes(from: Self.login(), editedText: text).isEmpty)
    }

    @Test func onlyWhatChangedIsWritten() throws {
        let edit = try EditorDocument.changes(
            from: Self.login(), editedText: "n3w-pass\nusername: octo\nurl: https://github.com\nemail: o@example.com\n\nline one\nline two\n")
        #expect(edit.setFields.map(\.name) == ["password", "email"])
        #expect(edit.setFields[0].isSecret)
        #expect(edit.setFields[0].value == "n3w-pass")
        #expect(!edit.setFields[1].isSecret)
        #expect(edit.unsetFields.isEmpty)
    }

    @Test func removedLinesRemoveFieldsButNeverAttachments() throws {
        let edit = try EditorDocument.changes(from: Self.login(), editedText: "hunter2\nusername: octo\n")
        #expect(edit.setFields.isEmpty)
        #expect(Set(edit.unsetFields) == ["url", "notes"])
    }

    @Test func valuesKeepColonsAndSpaces() throws {
        let edit = try EditorDocument.changes(from: Self.login(), editedText: "hunter2\nusername: octo\nurl:  http://h:8080/x\n\nline one\nline two")
        #expect(edit.setFields.map(\.value) == [" http://h:8080/x"])
    }

    @Test func errorsNameTheLine() {
        func failure(_ text: String) -> CofferError? {
            do {
                _ = try EditorDocument.changes(from: Self.login(), editedText: text)
                return nil
            } catch { return error }
        }
        #expect(failure("pw\nusername octo\n")?.message.hasPrefix("line 2:") == true)
        #expect(failure("pw\nusername: a\nusername: b\n")?.message == "line 3: field 'username' is given twice")
        #expect(failure("pw\n@name: x\n")?.message.hasPrefix("line 2:") == true)
        #expect(failure("pw\nkey.pem: text\n")?.message.contains("attachment") == true)
        #expect(failure("pw\nnotes: x\n")?.message.hasPrefix("line 2:") == true)
        #expect(failure("pw\nusername octo\n")?.kind == .badData)
    }

    @Test func multiLineFieldsCannotBeRendered() {
        var item = Self.login()
        item.fields[0].value = "two\nlines"
        #expect(throws: CofferError.self) { try EditorDocument.render(item) }
    }
}

@Suite("attachments in the item model and payload")
struct AttachmentKitTests {
    @Test func payloadFlagBitTwoMarksAFileAndOldPayloadsReadAsBefore() throws {
        let p = FieldPayload(name: "k", value: [0, 255, 10], isSecret: true, isFile: true)
        #expect(p.encoded[0] == 0b101)
        #expect(try FieldPayload(decoding: p.paddedEncoding) == p)
        #expect(try FieldPayload(decoding: p.encoded) == p)
        // A text payload's bytes are exactly as before the attachment flag.
        let text = FieldPayload(name: "k", value: Array("v".utf8), isSecret: true)
        #expect(text.encoded == [1, 0, 1, UInt8(ascii: "k"), 0, 0, 0, 1, UInt8(ascii: "v")])
        #expect(try FieldPayload(decoding: text.encoded).isFile == false)
        // Bits above 2 stay reserved.
        var bad = p.encoded
        bad[0] = 0b1000
        #expect(throws: FormatError.self) { try FieldPayload(decoding: bad) }
    }

    @Test func bytesSurviveTheVaultAndLimitsHold() throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        let bytes: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) } + [0xff, 0xfe, 0, 0xc3]
        _ = try vault.add(ItemDraft(name: "files", type: .custom, fields: [Field(name: "blob", bytes: bytes, isSecret: true, isFile: true)]))
        let f = try #require(try vault.item(named: "files").field("blob"))
        #expect(f.bytes == bytes)
        #expect(f.isFile && f.isSecret)
        // Above 16 MiB: refused, nothing written.
        var edit = ItemEdit()
        edit.setFields = [Field(name: "big", bytes: [UInt8](repeating: 1, count: Field.maxValueBytes + 1), isSecret: true, isFile: true)]
        #expect(throws: CofferError.self) { try vault.edit("files", edit) }
        // Two 15 MiB values fit each; together they pass the 28 MiB item limit.
        let fifteen = [UInt8](repeating: 2, count: 15 * 1024 * 1024)
        edit.setFields = [Field(name: "a", bytes: fifteen, isSecret: true, isFile: true), Field(name: "b", bytes: fifteen, isSecret: true, isFile: true)]
        do {
            try vault.edit("files", edit)
            Issue.record("an item above 28 MiB was stored")
        } catch {
            #expect(error.kind == .usage)
            #expect(error.message.contains("28 MiB"))
        }
        #expect(try vault.item(named: "files").fields.map(\.name) == ["blob"])
    }

    @Test func moveAndCopyAreAllOrNothing() throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        _ = try vault.add([
            ItemDraft(name: "a/one", type: .apiKey, fields: [Field(name: "key", value: "1", isSecret: true)]),
            ItemDraft(name: "a/two", type: .apiKey, fields: [Field(name: "key", value: "2", isSecret: true)]),
            ItemDraft(name: "b/two", type: .apiKey, fields: [Field(name: "key", value: "x", isSecret: true)]),
        ])
        let plan = try vault.plan(from: "a/", to: "b/")
        #expect(plan.map(\.to) == ["b/one", "b/two"])
        #expect(throws: CofferError.self) { try vault.move(plan) }
        #expect(try vault.list().map(\.name) == ["a/one", "a/two", "b/two"])
        // Swapping names inside one prefix move is fine: a/ → c/ then back.
        try vault.move(try vault.plan(from: "a/", to: "c/"))
        try vault.copy(try vault.plan(from: "c/", to: "a/"))
        #expect(try vault.list().map(\.name) == ["a/one", "a/two", "b/two", "c/one", "c/two"])
        #expect(try vault.item(named: "a/two").field("key")?.value == "2")
        #expect(try vault.item(named: "a/two").id != vault.item(named: "c/two").id)
    }
}
