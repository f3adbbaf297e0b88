import CofferInterop
import CofferKit
import Foundation
import Testing

/// Issue 25 item 3: KeePassXC's XML export of a KDBX 4 database refers to
/// attachments it does not hold.
@Suite struct KeePassDanglingAttachmentTests {
    static let file = "keepassxc-2.7.4-kdbx41-export.xml"

    @Test func everyEntryImportedWithOneWarningEach() throws {
        let r = try KeePassXML.read(try Fixture.data(Self.file), file: "export.xml")
        #expect(r.entries.map(\.name).sorted() == ["Scan", "Work/Mail"])
        #expect(r.entry("Work/Mail")?.value("username") == "alice" && r.entry("Scan")?.value("username") == "bob")
        #expect(r.entries.allSatisfy { !$0.fields.contains(where: \.isFile) })
        let warned = r.warnings.filter { $0.message.contains("--from kdbx") }
        // Once per entry, though history versions refer to them again.
        #expect(warned.map(\.entry).sorted() == ["Scan", "Work/Mail"])
        let mail = try #require(warned.first { $0.entry == "Work/Mail" })
        #expect(mail.message.hasPrefix("attachments 'f', 'g' were not imported"), "\(mail.message)")
        #expect(warned.first { $0.entry == "Scan" }?.message.hasPrefix("attachment 'scan.pdf' was not imported") == true)
    }

    @Test func readFromPathWarnsToo() throws {
        let read = try KeePassXML.read(path: Fixture.path(Self.file))
        #expect(read.entries.count == 2 && read.warnings.filter { $0.message.contains("--from kdbx") }.count == 2)
    }

    @Test func externalPoolSuppliesTheBytes() throws {
        let bytes = Data("hello".utf8) + Data([0]) + Data("world".utf8)
        let r = try KeePassXML.read(try Fixture.data(Self.file), file: "export.xml", binaries: [0: bytes])
        let mail = try #require(r.entry("Work/Mail"))
        #expect(mail.fields.filter(\.isFile).map(\.name) == ["f", "g"])
        #expect(mail.fields.first { $0.name == "f" }?.bytes == [UInt8](bytes))
        #expect(r.entry("Scan")?.fields.first { $0.name == "scan.pdf" }?.bytes == [UInt8](bytes))
        #expect(!r.warnings.contains { $0.message.contains("--from kdbx") })
        // The history versions get their attachment as well.
        #expect(r.entry("Scan")?.history.contains { $0.fields.contains { $0.name == "scan.pdf" } } == true)
    }

    @Test func externalBinaryTooLargeIsWarnedNotLoaded() throws {
        let big = Data(count: Field.maxValueBytes + 1)
        let r = try KeePassXML.read(try Fixture.data(Self.file), file: "export.xml", binaries: [0: big])
        #expect(r.entries.count == 2)
        #expect(r.warnings.contains { $0.entry == "Scan" && $0.message.contains("'scan.pdf' was not imported: it is larger than 16 MiB") })
    }
}

/// Issue 25 item 4: the TOTP layouts of KeePass-family programs become one
/// `totp` URI that `coffer otp` computes (RFC 6238 appendix B's keys).
@Suite struct KeePassTOTPLayoutTests {
    func code(_ r: ImportedFile, _ name: String, at time: Int64 = 59) throws -> String {
        let e = try #require(r.entry(name), "no entry \(name)")
        let uri = try #require(e.value("totp"), "no totp in \(name): \(e.fields.map(\.name))")
        #expect(e.isSecret("totp") == true)
        return try TOTP.parse(uri).code(at: time)
    }

    @Test func everyLayoutGivesTheRightCode() throws {
        let r = try KeePassXML.read(try Fixture.data("keepass-totp-layouts.xml"), file: "t.xml")
        #expect(try code(r, "otp URI") == "94287082")
        #expect(try code(r, "KeeOTP") == "8920136")
        #expect(try code(r, "Seed and settings") == "287082")
        #expect(try code(r, "Steam") == "PV9M4")
        #expect(try code(r, "Steam", at: 1_111_111_109) == "PY4YB")
        #expect(try code(r, "TimeOtp Base32") == "84755224")
        #expect(try code(r, "TimeOtp Hex") == "46119246")
        #expect(try code(r, "TimeOtp Base64") == "90693936")
        #expect(try code(r, "TimeOtp UTF-8") == "94287082")
        let kee = try TOTP.parse(try #require(r.entry("KeeOTP")?.value("totp")))
        #expect(kee.period == 60 && kee.digits == 7 && kee.algorithm == .sha256)
        // The strings that held the TOTP are not kept beside it.
        for e in r.entries where e.name != "Broken seed" {
            #expect(!e.fields.contains { $0.name.hasPrefix("TimeOtp") || $0.name.hasPrefix("TOTP ") || $0.name == "otp" }, "\(e.name)")
        }
    }

    @Test func unreadableTOTPIsKeptAndWarnedWithoutItsValue() throws {
        let r = try KeePassXML.read(try Fixture.data("keepass-totp-layouts.xml"), file: "t.xml")
        let broken = try #require(r.entry("Broken seed"))
        #expect(broken.value("totp") == nil)
        #expect(broken.value("TOTP Seed") == "not base32!" && broken.isSecret("TOTP Seed") == true)
        #expect(broken.value("TOTP Settings") == "30;6")
        let w = try #require(r.warnings.first { $0.entry == "Broken seed" })
        #expect(w.message.contains("'TOTP Seed' is not base32") && !w.message.contains("not base32!"))
        #expect(r.warnings.filter { $0.entry == "Broken seed" }.count == 1)
    }

    @Test(arguments: [
        (["otp": "key=GEZDGNBVGY3TQOJQ&size=9"], "size"),
        (["TOTP Seed": "GEZDGNBVGY3TQOJQ", "TOTP Settings": "abc"], "TOTP Settings"),
        (["TimeOtp-Secret-Hex": "31x2"], "TimeOtp-Secret-Hex"),
        (["TimeOtp-Secret-Base32": "GEZDGNBVGY3TQOJQ", "TimeOtp-Algorithm": "HMAC-MD5"], "TimeOtp-Algorithm"),
        (["TimeOtp-Secret-Base32": "GEZDGNBVGY3TQOJQ", "TimeOtp-Length": "4"], "TimeOtp-Length"),
    ])
    func badSettingsAreNamed(strings: [String: String], named: String) {
        guard case .unreadable(let why, let keys) = KeePassOTP.extract(strings, label: "x") else {
            Issue.record("accepted \(strings)")
            return
        }
        #expect(why.contains(named) && Set(keys) == Set(strings.keys), "\(why)")
    }

    @Test func uriLabelIsEscaped() throws {
        guard case .mapped(let uri, _) = KeePassOTP.extract(["TOTP Seed": "GEZDGNBVGY3TQOJQ"], label: "Wörk & Co: mail?") else {
            Issue.record("not mapped")
            return
        }
        let t = try TOTP.parse(uri)
        #expect(t.period == 30 && t.digits == 6 && t.issuer == "Wörk & Co" && t.account == "mail?")
    }
}

/// Empty custom strings travel both ways through KeePass XML.
@Suite struct KeePassEmptyFieldTests {
    @Test func keptOnReadStandardOnesDropped() throws {
        let r = try KeePassXML.read(try Fixture.data("keepass-totp-layouts.xml"), file: "t.xml")
        let e = try #require(r.entry("Empty custom"))
        #expect(e.value("security question") == "" && e.value("PIN") == "" && e.isSecret("PIN") == true)
        #expect(e.value("url") == nil && e.value("notes") == nil)
    }

    @Test func roundTrip() throws {
        let entry = InterchangeEntry(
            name: "a", type: .login,
            fields: [
                Field(name: "username", value: "u", isSecret: false), Field(name: "password", value: "p", isSecret: true),
                Field(name: "answer", value: "", isSecret: true), Field(name: "hint", value: "", isSecret: false),
            ])
        let back = try KeePassXML.read(KeePassXML.write([entry]), file: "w.xml")
        #expect(Set(back.entries.first?.fields ?? []) == Set(entry.fields))
    }
}

/// Issue 25 item 4: CSV exports read as their programs meant them.
@Suite struct CSVFidelityTests {
    func read(_ name: String, lenient: Bool = false) throws -> (ImportedFile, CSVImport.Layout) {
        try CSVImport.read(try Fixture.data(name), file: name, lenient: lenient)
    }

    @Test func bitwardenFieldsOneFieldPerLineLFOrCRLF() throws {
        let (r, layout) = try read("bitwarden-crlf.csv")
        #expect(layout == .bitwarden)
        let router = try #require(r.entry("Home/Router"))
        #expect(router.value("pin") == "1" && router.value("oldpin") == "2", "\(router.fields)")
        #expect(router.isSecret("pin") == true && router.isSecret("oldpin") == true)
        let nas = try #require(r.entry("Home/NAS"))
        #expect(nas.value("pin") == "3" && nas.value("empty") == "" && nas.value("url") == "https://nas.lan")
        #expect(nas.value("url2") == "https://nas.example" && nas.value("url3") == "https://nas.lan:5001")
        #expect(nas.value("notes") == "first\r\nsecond" && nas.tags == ["favorite"])
        // `reprompt` (Bitwarden's master-password re-prompt) has no place in Coffer.
        #expect(r.warnings.map(\.message) == ["bitwarden-crlf.csv: column reprompt has values but is not imported (coffer has no place for it)"])
    }

    @Test func chromeRowsWithoutTheTrailingNoteCell() throws {
        let (r, layout) = try read("chrome-no-note.csv")
        #expect(layout == .chrome && r.entries.count == 3 && r.warnings.isEmpty)
        #expect(r.entry("accounts.example")?.value("password") == "c-pass" && r.entry("accounts.example")?.value("notes") == nil)
        #expect(r.entry("shop.example")?.value("notes") == "remember the PIN")
        #expect(r.entry("bare.example")?.value("username") == "erin")
    }

    @Test func worseRowsRefusedOrSkippedWithLenient() throws {
        do {
            _ = try read("csv-bad-rows.csv")
            Issue.record("accepted")
        } catch let error as CofferError {
            #expect(error.kind == .badData && error.message == "csv-bad-rows.csv: line 3: 7 columns, but the header has 5")
            #expect(error.hint?.contains("--lenient") == true)
        } catch {
            Issue.record("\(error)")
        }
        let (r, _) = try read("csv-bad-rows.csv", lenient: true)
        #expect(r.entries.map(\.name) == ["good", "also good"])
        #expect(
            r.warnings.map(\.message) == [
                "csv-bad-rows.csv: line 3: 7 columns, but the header has 5: this line was skipped (--lenient)",
                "csv-bad-rows.csv: line 4: 2 columns, but the header has 5: this line was skipped (--lenient)",
                "csv-bad-rows.csv: 2 lines were skipped (--lenient); the rest was imported",
            ])
        // Never a value in a warning.
        #expect(!r.warnings.contains { $0.message.contains("x-pass") || $0.message.contains("y.example") })
    }

    @Test func lastPassBackslashSubFolders() throws {
        let (r, _) = try read("lastpass-subfolders.csv")
        #expect(r.entries.map(\.name) == ["Emails/WS/Webmail", "Shared-Team/Ops/DB/Shared Site", "A∕B/Slash"])
    }

    @Test func onePassword8() throws {
        let (r, layout) = try read("1password8.csv")
        #expect(layout == .onePassword)
        let gh = try #require(r.entry("GitHub"))
        #expect(gh.value("username") == "octo" && gh.value("password") == "gh-pass" && gh.value("url") == "https://github.com/login")
        #expect(gh.value("totp")?.hasPrefix("otpauth://totp/GitHub:octo?secret=") == true && gh.isSecret("totp") == true)
        #expect(gh.value("notes") == "two\nlines" && gh.tags == ["dev", "work", "favorite"])
        #expect(r.entry("Old forum")?.tags == ["archived"])
        #expect(r.warnings.isEmpty)
    }

    @Test func keePass2CSVWithBackslashEscapes() throws {
        let (r, layout) = try read("keepass2.csv")
        #expect(layout == .keepass)
        let q = try #require(r.entry("Quoted"))
        #expect(q.value("username") == "q\\user" && q.value("password") == "pa\"ss,word" && q.value("url") == "https://q.example")
        #expect(q.value("notes") == "line one\r\nline \"two\"")
        #expect(r.entry("Sample Entry")?.value("username") == "User Name")
    }

    @Test func firefoxMetadataColumnsWarnedByNameOnly() throws {
        let (r, _) = try read("firefox.csv")
        #expect(
            r.warnings.map(\.message) == [
                "firefox.csv: columns formActionOrigin, guid, timeCreated, timeLastUsed, timePasswordChanged have values but are not imported (coffer has no place for them)"
            ])
        #expect(!r.warnings.contains { $0.message.contains("1700000000000") || $0.message.contains("{g1}") })
    }

    @Test func keepassXCCSVTOTPInKeeOTPForm() throws {
        let csv =
            "\"Group\",\"Title\",\"Username\",\"Password\",\"URL\",\"Notes\",\"TOTP\"\n\"Root\",\"T\",\"u\",\"p\",\"\",\"\",\"key=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&step=30&size=8\"\n"
        let (r, _) = try CSVImport.read(Data(csv.utf8), file: "k.csv")
        #expect(try TOTP.parse(try #require(r.entry("T")?.value("totp"))).code(at: 59) == "94287082")
    }
}

/// The text of a pass entry written by `export --format pass`.
@Suite struct PassEntryTextTests {
    @Test func passwordFieldsOtpNotesAndWhatIsLeftOut() {
        let e = InterchangeEntry(
            name: "web/x", type: .login,
            fields: [
                Field(name: "username", value: "al", isSecret: false), Field(name: "password", value: "pw", isSecret: true),
                Field(name: "url", value: "https://a", isSecret: false), Field(name: "url2", value: "https://b", isSecret: false),
                Field(name: "totp", value: "JBSW Y3DP EHPK 3PXP", isSecret: true), Field(name: "key", value: "-----A\nB-----", isSecret: true),
                Field(name: "notes", value: "n1\nn2\n", isSecret: false), Field(name: "scan.pdf", bytes: [1, 2], isSecret: true, isFile: true),
            ])
        let (text, warnings) = PassStoreWriter.text(of: e)
        #expect(text == "pw\nusername: al\nurl: https://a\nurl: https://b\notpauth://totp/web%2Fx?secret=JBSWY3DPEHPK3PXP\nn1\nn2\nkey:\n-----A\nB-----\n")
        #expect(warnings.count == 2 && warnings[0].contains("'scan.pdf'") && warnings[1].contains("'key'"))
        #expect(!warnings.joined().contains("pw") && !warnings.joined().contains("-----A"))
        // Read back by the pass reader: the same one-line fields.
        let back = PassStore.entry(name: "web/x", text: text, origin: "")
        #expect(back.value("password") == "pw" && back.value("username") == "al" && back.value("url2") == "https://b")
        #expect(back.value("totp").map { (try? TOTP.parse($0))?.code(at: 59) } == (try? TOTP.parse("JBSWY3DPEHPK3PXP"))?.code(at: 59))
    }

    @Test func mainSecretOfOtherTypesAndNotes() {
        let api = InterchangeEntry(name: "k", type: .apiKey, fields: [Field(name: "key", value: "sk-1", isSecret: true)])
        #expect(PassStoreWriter.text(of: api).text == "sk-1\n")
        let note = InterchangeEntry(name: "n", type: .note, fields: [Field(name: "notes", value: "a\nb", isSecret: true)])
        #expect(PassStoreWriter.text(of: note).text == "\na\nb\n")
        #expect(PassStore.entry(name: "n", text: "\na\nb\n", origin: "").type == .note)
        #expect(PassStoreWriter.recipients(inGpgID: "a@b # me\n\n  C0FFEE  \n# all\n") == ["a@b", "C0FFEE"])
    }
}

extension PassEntryTextTests {
    @Test func namesThatWouldLeaveTheStoreAreNotWritten() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pass-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let entries = ["../escape", "a/../b", "./c"].map {
            InterchangeEntry(name: $0, type: .login, fields: [Field(name: "password", value: "x", isSecret: true)])
        }
        // gpg is never started: nothing is left to encrypt.
        let r = try PassStoreWriter.write(entries, to: dir + "/store", gpgIDs: ["x@y.invalid"], gpg: "/nonexistent/gpg")
        #expect(r.written.isEmpty && r.warnings.count == 3 && r.warnings.allSatisfy { $0.message.hasPrefix("not exported: a pass entry's name") })
        #expect(!FileManager.default.fileExists(atPath: dir + "/escape.gpg") && !FileManager.default.fileExists(atPath: dir + "/escape"))
    }
}
