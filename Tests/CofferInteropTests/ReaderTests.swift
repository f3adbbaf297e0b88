import CofferInterop
import CofferKit
import Foundation
import Testing

/// Fixtures in Tests/Fixtures/interop, built from each vendor's documented
/// format (docs/import-export.md says where each is documented).
enum Fixture {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/interop")
    static func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    static func data(_ name: String) throws -> Data { try Data(contentsOf: dir.appendingPathComponent(name)) }
}

extension ImportedFile {
    func entry(_ name: String) -> InterchangeEntry? { entries.first { $0.name == name } }
}

extension InterchangeEntry {
    func value(_ field: String) -> String? { fields.first { $0.name == field }?.value }
    func isSecret(_ field: String) -> Bool? { fields.first { $0.name == field }?.isSecret }
}

@Suite struct BitwardenReaderTests {
    @Test func everyItemType() throws {
        let r = try BitwardenJSON.read(try Fixture.data("bitwarden.json"), file: "bw.json")
        #expect(r.entries.count == 6)
        let gh = try #require(r.entry("Work/GitHub"))
        #expect(gh.type == .login)
        #expect(gh.value("username") == "alice")
        #expect(gh.value("password") == "gh-new-pass")
        #expect(gh.value("url") == "https://github.com")
        #expect(gh.value("url2") == "https://api.github.com")
        #expect(gh.value("totp")?.hasPrefix("otpauth://totp/GitHub") == true)
        #expect(gh.value("notes") == "first line\nsecond line")
        #expect(gh.value("recovery") == "rc-1234" && gh.isSecret("recovery") == true)
        #expect(gh.value("team") == "platform" && gh.isSecret("team") == false)
        #expect(gh.value("2fa") == "true")
        #expect(gh.value("empty") == "")
        #expect(gh.value("user link") == nil)
        #expect(gh.tags == ["favorite"])
        #expect(gh.history.map { $0.fields.first { $0.name == "password" }?.value } == ["gh-old-1", "gh-old-2"])
        #expect(r.warnings.contains { $0.entry == "Work/GitHub" && $0.message.contains("linked field 'user link'") })

        let note = try #require(r.entry("Wi-Fi codes ☕"))
        #expect(note.type == .note && note.value("notes") == "Küche: 1234\nBüro: 5678\n" && note.isSecret("notes") == true)
        let card = try #require(r.entry("Personal/Bank/Visa"))
        #expect(card.value("number") == "4111111111111111" && card.isSecret("number") == true && card.value("cardholder") == "Zoë Example")
        let me = try #require(r.entry("Me"))
        #expect(me.value("ssn") == "123-45-6789" && me.isSecret("ssn") == true && me.value("state") == nil)
        let key = try #require(r.entry("Work/deploy key"))
        #expect(key.value("private-key")?.contains("OPENSSH") == true && key.value("public-key") == "ssh-ed25519 AAAAC3 deploy")
        #expect(r.entry("untitled") != nil)
    }

    @Test func encryptedExportIsRefused() {
        let data = Data(#"{"encrypted": true, "passwordProtected": true, "data": "2.abc"}"#.utf8)
        #expect(throws: CofferError.self) { try BitwardenJSON.read(data, file: "x.json") }
        do { _ = try BitwardenJSON.read(data, file: "x.json") } catch {
            #expect(error.kind == .badData && error.message.contains("password-protected"))
        }
    }

    @Test func olderExportWithoutEncryptedKey() throws {
        let data = Data(#"{"folders": [], "items": [{"type": 2, "name": "n", "notes": "x", "secureNote": {"type": 0}}]}"#.utf8)
        let r = try BitwardenJSON.read(data, file: "old.json")
        #expect(r.entries.first?.value("notes") == "x")
    }

    @Test(arguments: [
        (#"{"items": [ {"type": 1, "name": "a"} "#, "malformed JSON"),
        (#"{"items": [ {"type": 9, "name": "a"} ]}"#, "items[0] ('a'): unknown item type 9"),
        (#"{"items": [ {"name": "a"} ]}"#, "no \"type\""),
        (#"{"items": [ 5 ]}"#, "items[0]: expected a JSON object"),
        (#"{"folders": []}"#, "not a Bitwarden export"),
    ])
    func badInputNamesTheEntry(json: String, expected: String) {
        do {
            _ = try BitwardenJSON.read(Data(json.utf8), file: "bad.json")
            Issue.record("accepted bad input")
        } catch {
            #expect(error.kind == .badData)
            #expect(error.message.hasPrefix("bad.json"))
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }
}

@Suite struct OnePUXReaderTests {
    @Test func accountsVaultsItems() throws {
        let r = try OnePUX.read(try Fixture.data("1pux-export.data"), file: "export.data")
        #expect(r.entries.count == 4)
        let login = try #require(r.entry("Private/Example Login"))
        #expect(login.type == .login)
        #expect(login.value("username") == "zoe" && login.value("password") == "s3cret-ü")
        #expect(login.value("url") == "https://example.com/login" && login.value("url2") == "https://alt.example.com")
        #expect(login.value("totp") == "otpauth://totp/Example:zoe?secret=JBSWY3DPEHPK3PXP")
        #expect(login.value("PIN") == "9876" && login.isSecret("PIN") == true)
        #expect(login.value("recovery email") == "r@example.com")
        #expect(login.value("since") == "2024-01-01")
        #expect(login.value("notes") == "multi\nline note")
        #expect(Set(login.tags) == ["web", "family"])
        #expect(login.history.count == 1 && login.history[0].fields.contains(Field(name: "password", value: "old-pass", isSecret: true)))
        let note = try #require(r.entry("Private/Secret Note"))
        #expect(note.type == .note && note.value("notes") == "Ünïcode note\nwith two lines")
        let api = try #require(r.entry("Private/OpenAI"))
        #expect(api.type == .custom && api.value("credential") == "sk-test-123" && api.isSecret("credential") == true)
        #expect(api.value("category") == "API credential" && api.tags == ["archived"] && api.value("empty") == nil)
        #expect(r.warnings.contains { $0.entry == "Private/Passport scan" && $0.message.contains("passport.pdf") })
    }

    @Test func notAZip() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("not-\(UUID()).1pux").path
        try Data("plain text".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try OnePUX.read(path: path)
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message.contains("not a zip"))
        }
    }
}

@Suite struct CSVReaderTests {
    @Test func parserQuotesAndLines() throws {
        let rows = try CSV.parse("a,b\r\n\"x,\"\"y\"\"\",\"multi\nline\"\nlast,\n", file: "f")
        #expect(rows.map(\.values) == [["a", "b"], ["x,\"y\"", "multi\nline"], ["last", ""]])
        #expect(rows.map(\.line) == [1, 2, 4])
    }

    @Test func unterminatedQuoteNamesItsLine() {
        do {
            _ = try CSV.parse("a,b\n1,\"open\n2,3\n", file: "f.csv")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message == "f.csv: line 2: a quoted field is never closed")
        }
    }

    @Test func wrongColumnCount() {
        do {
            _ = try CSVImport.read(Data("name,url,username,password\nx,y\n".utf8), file: "f.csv")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message == "f.csv: line 2: 2 columns, but the header has 4")
        }
    }

    @Test func browsers() throws {
        let (chrome, l1) = try CSVImport.read(try Fixture.data("chrome.csv"), file: "chrome.csv")
        #expect(l1 == .chrome)
        #expect(chrome.entry("GitHub")?.value("password") == "p,ss\"word")
        #expect(chrome.entry("ünï.example")?.value("notes") == "line 1\nline 2")
        #expect(chrome.entry("Empty")?.fields == [Field(name: "url", value: "https://empty.example", isSecret: false)])
        let (fx, l2) = try CSVImport.read(try Fixture.data("firefox.csv"), file: "firefox.csv")
        #expect(l2 == .firefox && fx.entry("mozilla.org")?.value("password") == "fx-pass")
        let (lp, l3) = try CSVImport.read(try Fixture.data("lastpass.csv"), file: "lastpass.csv")
        #expect(l3 == .lastpass && lp.entry("Work/LP Site")?.value("notes") == "some notes")
        #expect(lp.entry("LP Note")?.type == .note && lp.entry("LP Note")?.value("notes") == "secure\nnote")
        let (kx, l4) = try CSVImport.read(try Fixture.data("keepassxc.csv"), file: "kx.csv")
        #expect(l4 == .keepassxc && kx.entry("Work/KX Entry")?.value("totp")?.hasPrefix("otpauth://") == true)
        let (bw, l5) = try CSVImport.read(try Fixture.data("bitwarden.csv"), file: "bw.csv")
        #expect(l5 == .bitwarden && bw.entry("Work/BW CSV")?.value("pin") == "1234" && bw.entry("Work/BW CSV")?.isSecret("pin") == true)
        #expect(bw.entry("BW Note")?.type == .note)
    }

    @Test func explicitColumns() throws {
        let cols = try CSVImport.parseColumns("name=title,password=pass,folder=dir")
        let (r, _) = try CSVImport.read(Data("title,pass,dir,extra\nsvc,pw,team,zz\n".utf8), file: "c.csv", columns: cols)
        #expect(r.entries.first?.name == "team/svc" && r.entries.first?.value("password") == "pw")
        #expect(r.warnings.contains { $0.message.contains("extra") })
        #expect(throws: CofferError.self) { try CSVImport.parseColumns("password=pass") }
        #expect(throws: CofferError.self) { try CSVImport.read(Data("a,b\n1,2\n".utf8), file: "c.csv", columns: [("name", "zzz")]) }
    }
}

@Suite struct KeePassXMLReaderTests {
    static let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <KeePassFile><Meta><RecycleBinUUID>BIN=</RecycleBinUUID><Binaries><Binary ID="0" Compressed="True">H4sIANxSBGsC/8tIzcnJZ/gPAHLytz4HAAAA</Binary></Binaries></Meta><Root><Group><UUID>R=</UUID><Name>Root</Name>
        <Entry><UUID>E1</UUID><Tags>a;b</Tags><Times><ExpiryTime>2030-01-02T00:00:00Z</ExpiryTime><Expires>True</Expires></Times>
        <String><Key>Title</Key><Value>Top</Value></String><String><Key>Password</Key><Value ProtectInMemory="True">p&amp;w</Value></String>
        <String><Key>api token</Key><Value ProtectInMemory="True">tok</Value></String><String><Key>otp</Key><Value>otpauth://totp/x?secret=A</Value></String>
        <Binary><Key>id.txt</Key><Value Ref="0"/></Binary>
        <History><Entry><Times><LastModificationTime>2020-01-01T00:00:00Z</LastModificationTime></Times><String><Key>Title</Key><Value>Top</Value></String><String><Key>Password</Key><Value>old</Value></String></Entry></History>
        </Entry>
        <Group><UUID>G=</UUID><Name>Wörk</Name><Entry><String><Key>Title</Key><Value>a/b</Value></String><String><Key>Notes</Key><Value>x
        y</Value></String></Entry></Group>
        <Group><UUID>BIN=</UUID><Name>Recycle Bin</Name><Entry><String><Key>Title</Key><Value>gone</Value></String></Entry></Group>
        </Group></Root></KeePassFile>
        """

    @Test func groupsFieldsHistoryTags() throws {
        let r = try KeePassXML.read(Data(Self.xml.utf8), file: "k.xml")
        #expect(r.entries.map(\.name) == ["Top", "Wörk/a∕b"])
        let top = r.entries[0]
        #expect(top.value("password") == "p&w" && top.value("api token") == "tok" && top.isSecret("api token") == true)
        #expect(top.value("totp") == "otpauth://totp/x?secret=A")
        #expect(top.tags == ["a", "b"] && top.expires == Day("2030-01-02"))
        #expect(top.history.count == 1 && top.history[0].fields == [Field(name: "password", value: "old", isSecret: true)])
        #expect(r.entries[1].type == .note && r.entries[1].value("notes") == "x\ny")
        #expect(top.fields.contains(Field(name: "id.txt", bytes: Array("hello".utf8) + [0, 0xFF], isSecret: true, isFile: true)))
        #expect(!r.warnings.contains { $0.message.contains("id.txt") })
        #expect(r.warnings.contains { $0.message.contains("recycle bin") })
    }

    @Test func roundTripThroughWriter() throws {
        let entries = [
            InterchangeEntry(
                name: "work/gh", type: .login,
                fields: [
                    Field(name: "username", value: "al<i>ce", isSecret: false), Field(name: "password", value: "p\"w&", isSecret: true),
                    Field(name: "notes", value: "two\nlines", isSecret: false), Field(name: "token", value: "ключ", isSecret: true),
                ], tags: ["x", "y"], expires: Day("2031-05-06"))
        ]
        let back = try KeePassXML.read(KeePassXML.write(entries), file: "w.xml")
        #expect(back.entries.count == 1)
        let e = back.entries[0]
        #expect(e.name == "work/gh" && Set(e.fields) == Set(entries[0].fields) && e.tags == ["x", "y"] && e.expires == Day("2031-05-06"))
    }

    @Test func malformedXMLNamesTheLine() {
        do {
            _ = try KeePassXML.read(Data("<KeePassFile>\n<Root>\n<Group></Entry>".utf8), file: "bad.xml")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message.hasPrefix("bad.xml: line 3: malformed XML"))
        }
        do {
            _ = try KeePassXML.read(Data("<html></html>".utf8), file: "h.xml")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message.contains("not a KeePass XML file"))
        }
    }
}

@Suite struct PassAndDotenvReaderTests {
    @Test func passConvention() {
        let e = PassStore.entry(
            name: "web/x", text: "pw1\nlogin: alice\nurl: https://x.org\notpauth://totp/X?secret=A\nfree text\nhttps://not-a-field\n", origin: "")
        #expect(e.value("password") == "pw1" && e.value("username") == "alice" && e.value("url") == "https://x.org")
        #expect(e.value("totp") == "otpauth://totp/X?secret=A" && e.value("notes") == "free text\nhttps://not-a-field")
    }

    @Test func dotenvIsOneItem() throws {
        let r = try DotenvImport.read(Data("A=1\nexport B=\"two\\nlines\"\nA=2\n".utf8), file: ".env", itemName: "app")
        #expect(r.entries.count == 1 && r.entries[0].value("A") == "2" && r.entries[0].value("B") == "two\nlines")
        #expect(r.entries[0].env == ["A": "A", "B": "B"])
        #expect(r.warnings.count == 1)
        do {
            _ = try DotenvImport.read(Data("A=1\nnot a line\n".utf8), file: ".env", itemName: "app")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message.hasPrefix(".env:2:"))
        }
    }
}
