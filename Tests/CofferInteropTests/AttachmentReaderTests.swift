import CofferInterop
import CofferKit
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Attachments (binary fields) through the readers and writers other than
/// KeePass's reader: 1PUX documents and file fields, Coffer JSON version 2,
/// CSV and KeePass XML export, Bitwarden's `attachments` list, binary pass
/// entries (docs/import-export.md#attachments).
extension InterchangeEntry {
    func file(_ name: String) -> Field? { fields.first { $0.name == name && $0.isFile } }
}

/// Every byte value, so a reader that goes through text would change it.
let binaryBytes: [UInt8] = Array(0...255) + [0xFF, 0xFE, 0x00, 0xC3]

@Suite struct OnePUXAttachmentTests {
    /// An export.data with one item per case, built as 1Password documents
    /// it (support.1password.com/1pux-format/): a document item's
    /// `details.documentAttributes` and a section field `{"file": {…}}`
    /// point at `files/<documentId>__<fileName>` in the zip.
    static func exportData(_ items: [String]) -> Data {
        let json = """
            {"accounts": [{"attrs": {"accountName": "Me"}, "vaults": [{"attrs": {"name": "Private"}, "items": [
            \(items.joined(separator: ",\n"))
            ]}]}]}
            """
        return Data(json.utf8)
    }

    static func document(_ title: String, _ attributes: String) -> String {
        """
        {"uuid": "\(title)", "categoryUuid": "006", "state": "active",
         "overview": {"title": "\(title)"},
         "details": {"notesPlain": "", "documentAttributes": \(attributes)}}
        """
    }

    static func withFileField(_ title: String, _ file: String) -> String {
        """
        {"uuid": "\(title)", "categoryUuid": "001", "state": "active",
         "overview": {"title": "\(title)"},
         "details": {"loginFields": [{"designation": "password", "value": "pw", "fieldType": "P"}],
          "sections": [{"title": "Files", "fields": [{"title": "recovery codes", "id": "f1", "value": {"file": \(file)}}]}]}}
        """
    }

    @Test func documentsAndFileFieldsBecomeAttachments() throws {
        let data = Self.exportData([
            Self.document("Passport scan", #"{"fileName": "passport.pdf", "documentId": "doc1", "decryptedSize": 260}"#),
            Self.withFileField("GitHub", #"{"fileName": "codes.txt", "documentId": "doc2", "decryptedSize": 12}"#),
        ])
        let files = OnePUX.FilesInMemory([
            "files/doc1__passport.pdf": binaryBytes,
            "files/doc2__codes.txt": Array("1111\n2222\n3333".utf8),
        ])
        let r = try OnePUX.read(data, file: "export.data", files: files)
        #expect(r.warnings.isEmpty, "\(r.warnings)")
        let doc = try #require(r.entry("Private/Passport scan"))
        let pdf = try #require(doc.file("passport.pdf"))
        #expect(pdf.bytes == binaryBytes && pdf.isSecret)
        #expect(doc.value("category") == "document")
        let gh = try #require(r.entry("Private/GitHub"))
        #expect(gh.file("codes.txt")?.bytes == Array("1111\n2222\n3333".utf8))
        #expect(gh.value("password") == "pw")
    }

    @Test func missingAndOversizedFilesAreWarnedByName() throws {
        let big = Field.maxValueBytes + 1
        let data = Self.exportData([
            Self.document("Gone", #"{"fileName": "gone.pdf", "documentId": "d-missing"}"#),
            Self.document("Huge by size", "{\"fileName\": \"disk.iso\", \"documentId\": \"d-big\", \"decryptedSize\": \(big)}"),
            Self.document("Huge member", #"{"fileName": "video.mp4", "documentId": "d-member"}"#),
            Self.withFileField("Fine", #"{"fileName": "ok.bin", "documentId": "d-ok"}"#),
        ])
        let files = OnePUX.FilesInMemory([
            "files/d-member__video.mp4": [UInt8](repeating: 7, count: big),
            "files/d-ok__ok.bin": [1, 2, 3],
        ])
        let r = try OnePUX.read(data, file: "export.data", files: files)
        #expect(r.entries.count == 4, "the items are imported, without the files")
        #expect(r.entry("Private/Gone")?.fields.contains(where: \.isFile) == false)
        #expect(r.entry("Private/Fine")?.file("ok.bin")?.bytes == [1, 2, 3])
        #expect(r.warnings.count == 3, "\(r.warnings)")
        #expect(
            r.warnings.contains {
                $0.entry == "Private/Gone" && $0.message.contains("document 'gone.pdf' was not imported") && $0.message.contains("files/d-missing__gone.pdf")
            })
        #expect(r.warnings.contains { $0.entry == "Private/Huge by size" && $0.message.contains("'disk.iso'") && $0.message.contains("16 MiB") })
        #expect(r.warnings.contains { $0.entry == "Private/Huge member" && $0.message.contains("'video.mp4'") && $0.message.contains("16 MiB") })
    }

    @Test func anItemKeepsWithinTheItemLimit() throws {
        // Two 15 MiB files fit a field each but not one item (28 MiB).
        let size = 15 * 1024 * 1024
        let item = """
            {"uuid": "two", "categoryUuid": "006", "overview": {"title": "Two scans"},
             "details": {"documentAttributes": {"fileName": "a.pdf", "documentId": "a"},
              "sections": [{"fields": [{"title": "b", "value": {"file": {"fileName": "b.pdf", "documentId": "b"}}}]}]}}
            """
        let files = OnePUX.FilesInMemory([
            "files/a__a.pdf": [UInt8](repeating: 1, count: size), "files/b__b.pdf": [UInt8](repeating: 2, count: size),
        ])
        let r = try OnePUX.read(Self.exportData([item]), file: "export.data", files: files)
        let e = try #require(r.entry("Private/Two scans"))
        #expect(e.file("a.pdf")?.bytes.count == size && e.file("b.pdf") == nil)
        #expect(r.warnings.count == 1 && r.warnings[0].message.contains("'b.pdf'") && r.warnings[0].message.contains("28 MiB"), "\(r.warnings)")
    }

    @Test func twoFilesOfOneNameGetDistinctFields() throws {
        let item = """
            {"uuid": "x", "categoryUuid": "006", "overview": {"title": "Scans"},
             "details": {"documentAttributes": {"fileName": "scan.pdf", "documentId": "a"},
              "sections": [{"fields": [{"title": "back", "value": {"file": {"fileName": "scan.pdf", "documentId": "b"}}}]}]}}
            """
        let files = OnePUX.FilesInMemory(["files/a__scan.pdf": [1], "files/b__scan.pdf": [2]])
        let e = try #require(try OnePUX.read(Self.exportData([item]), file: "export.data", files: files).entry("Private/Scans"))
        #expect(e.file("scan.pdf")?.bytes == [1] && e.file("scan (2).pdf")?.bytes == [2])
    }

    @Test(arguments: [
        (#""passport.pdf""#, "documentAttributes: expected an object"),
        (#"{"fileName": "p.pdf"}"#, "documentAttributes: no documentId"),
        (#"{"fileName": "p.pdf", "documentId": ""}"#, "documentAttributes: no documentId"),
        (#"{"fileName": "p.pdf", "documentId": 12}"#, "documentAttributes: no documentId"),
        (#"{"fileName": "p.pdf", "documentId": "../../etc"}"#, "is not a plain identifier"),
        (#"{"documentId": "d1"}"#, "documentAttributes: no fileName"),
        (#"{"fileName": "p.pdf", "documentId": "d1", "decryptedSize": "many"}"#, "decryptedSize should be a whole number"),
        (#"{"fileName": "p.pdf", "documentId": "d1", "decryptedSize": -5}"#, "decryptedSize should be a whole number"),
    ])
    func malformedReferenceRefusesTheWholeImport(attributes: String, message: String) {
        let data = Self.exportData([
            Self.withFileField("Fine", #"{"fileName": "ok.bin", "documentId": "d-ok"}"#),
            Self.document("Bad doc", attributes),
        ])
        do {
            _ = try OnePUX.read(data, file: "export.data", files: OnePUX.FilesInMemory(["files/d-ok__ok.bin": [1]]))
            Issue.record("accepted a malformed reference")
        } catch {
            #expect(error.kind == .badData)
            #expect(error.message.contains("items[1] ('Private/Bad doc')") && error.message.contains(message), "\(error.message)")
        }
    }

    /// A member that cannot be extracted (bad CRC, damaged data) refuses
    /// the whole import, naming the item and the file.
    @Test func unreadableMemberIsRefusedNamingTheItem() {
        struct Damaged: OnePUX.Files {
            func read(documentId: String, fileName: String) throws(CofferError) -> OnePUX.Member {
                throw CofferError(.badData, "the archive member files/\(documentId)__\(fileName) cannot be extracted (bad CRC)")
            }
        }
        let data = Self.exportData([Self.document("Scan", #"{"fileName": "s.pdf", "documentId": "d9"}"#)])
        do {
            _ = try OnePUX.read(data, file: "export.data", files: Damaged())
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData)
            #expect(
                error.message
                    == "export.data: accounts[0].vaults[0].items[0] ('Private/Scan'): document 's.pdf': the archive member files/d9__s.pdf cannot be extracted (bad CRC)",
                "\(error.message)")
        }
    }

    @Test func malformedFileFieldIsRefusedNamingTheItem() {
        let data = Self.exportData([Self.withFileField("Broken", #"{"fileName": "x.bin"}"#)])
        do {
            _ = try OnePUX.read(data, file: "export.data")
            Issue.record("accepted")
        } catch {
            #expect(
                error.kind == .badData && error.message.contains("('Private/Broken')") && error.message.contains("file field 'recovery codes': no documentId"),
                "\(error.message)")
        }
    }
}

@Suite struct CofferJSONAttachmentTests {
    func entry() -> InterchangeEntry {
        var e = InterchangeEntry(name: "ssh/deploy", type: .custom)
        e.fields = [
            Field(name: "note", value: "text ü", isSecret: false),
            Field(name: "id_ed25519", bytes: binaryBytes, isSecret: true, isFile: true),
            Field(name: "empty.bin", bytes: [], isSecret: false, isFile: true),
        ]
        e.history = [
            InterchangeVersion(
                fields: [Field(name: "id_ed25519", bytes: [0xFF, 0], isSecret: true, isFile: true)], writtenAt: Date(timeIntervalSince1970: 1_700_000_000))
        ]
        return e
    }

    @Test func roundTripKeepsEveryByteAndTheFileFlag() throws {
        let data = try CofferJSON.write([entry()], history: true)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"version\" : 2"))
        #expect(text.contains("\"base64\" : \"\(Data(binaryBytes).base64EncodedString())\""))
        let back = try CofferJSON.read(data, file: "x.json")
        let e = try #require(back.entries.first)
        #expect(e.fields == entry().fields)
        #expect(e.history.map(\.fields) == entry().history.map(\.fields))
    }

    @Test func versionOneFilesStillRead() throws {
        let v1 =
            #"{"format":"coffer-json","version":1,"exportedAt":"2025-01-01T00:00:00Z","items":[{"name":"a","type":"api-key","fields":[{"name":"key","value":"sk-1","secret":true}],"tags":[],"source":null,"expires":null,"policy":"sync","env":{}}]}"#
        let r = try CofferJSON.read(Data(v1.utf8), file: "v1.json")
        #expect(r.entries.first?.fields == [Field(name: "key", value: "sk-1", isSecret: true)])
    }

    @Test(arguments: [
        (1, #"{"name":"f","secret":true,"file":true,"base64":"AAE="}"#, "attachments need Coffer JSON version 2"),
        (2, #"{"name":"f","secret":true,"file":true,"base64":"not base64!"}"#, "\"base64\" is not valid base64"),
        (2, #"{"name":"f","secret":true,"file":true}"#, "attachment 'f' has no \"base64\""),
        (2, #"{"name":"f","secret":true,"file":true,"base64":"AAE=","value":"x"}"#, "its bytes belong in \"base64\""),
        (2, #"{"name":"f","secret":true,"base64":"AAE="}"#, "has \"base64\" but not \"file\": true"),
        (3, #"{"name":"f","value":"v","secret":true}"#, "version 3 is not supported"),
    ])
    func badAttachmentsAreRefusedNamingTheItem(version: Int, field: String, message: String) {
        let json =
            "{\"format\":\"coffer-json\",\"version\":\(version),\"exportedAt\":\"x\",\"items\":[{\"name\":\"k\",\"type\":\"custom\",\"fields\":[\(field)]}]}"
        do {
            _ = try CofferJSON.read(Data(json.utf8), file: "c.json")
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .badData && error.message.contains(message), "\(error.message)")
            if version != 3 { #expect(error.message.contains("items[0] ('k')")) }
        }
    }
}

@Suite struct AttachmentExportTests {
    func entries() -> [InterchangeEntry] {
        var a = InterchangeEntry(name: "Work/AWS", type: .login)
        a.fields = [
            Field(name: "username", value: "me", isSecret: false),
            Field(name: "id.bin", bytes: binaryBytes, isSecret: true, isFile: true),
            Field(name: "copy.bin", bytes: binaryBytes, isSecret: true, isFile: true),
        ]
        var b = InterchangeEntry(name: "plain", type: .apiKey)
        b.fields = [Field(name: "key", value: "sk", isSecret: true)]
        var c = InterchangeEntry(name: "two", type: .custom)
        c.fields = [Field(name: "a <&>.pdf", bytes: [1], isSecret: true, isFile: true), Field(name: "b", bytes: [2], isSecret: true, isFile: true)]
        return [a, b, c]
    }

    @Test func csvLeavesAttachmentsOutWithOneWarningPerItem() {
        let out = CSVImport.write(entries())
        let text = String(decoding: out.data, as: UTF8.self)
        #expect(!text.contains("id.bin") && !text.contains("a <&>.pdf"))
        #expect(text.hasPrefix("name,type,tags,expires,username,password,url,notes,totp,key\r\n"), "\(text)")
        #expect(out.warnings.map(\.entry) == ["Work/AWS", "two"])
        #expect(out.warnings[0].message.contains("attachments 'id.bin', 'copy.bin' were not exported"))
        #expect(out.warnings[1].message.contains("'a <&>.pdf', 'b'"))
    }

    @Test func keepassXMLHoldsEachContentOnceInMetaBinaries() throws {
        let xml = String(decoding: KeePassXML.write(entries()), as: UTF8.self)
        let pooled = xml.components(separatedBy: "<Binary ID=").count - 1
        #expect(pooled == 3, "identical bytes are stored once: \(pooled)")
        let flat = xml.replacingOccurrences(of: "\t", with: "").replacingOccurrences(of: "\n", with: "")
        func pool(_ bytes: [UInt8]) -> String? {
            let tail = "\" Compressed=\"False\">\(Data(bytes).base64EncodedString())</Binary>"
            guard let end = flat.range(of: tail) else { return nil }
            return flat[..<end.lowerBound].components(separatedBy: "<Binary ID=\"").last
        }
        let shared = try #require(pool(binaryBytes))
        let one = try #require(pool([1]))
        let two = try #require(pool([2]))
        #expect(
            flat.contains("<Binary><Key>id.bin</Key><Value Ref=\"\(shared)\"/></Binary><Binary><Key>copy.bin</Key><Value Ref=\"\(shared)\"/></Binary>"),
            "\(xml)")
        #expect(flat.contains("<Binary><Key>a &lt;&amp;&gt;.pdf</Key><Value Ref=\"\(one)\"/></Binary><Binary><Key>b</Key><Value Ref=\"\(two)\"/></Binary>"))
        #expect(!flat.contains("<String><Key>id.bin</Key>"), "an attachment is not written as a string")
        // The XML parses.
        let parser = XMLParser(data: Data(xml.utf8))
        #expect(parser.parse())
    }
}

@Suite struct KeePassEmptyAttachmentTests {
    /// What `keepassxc-cli export --format xml` writes for an empty
    /// attachment: a pool entry marked Compressed with no data at all.
    @Test func emptyCompressedBinaryIsAnEmptyAttachment() throws {
        let xml = """
            <KeePassFile><Meta><Binaries><Binary ID="0" Compressed="True"/></Binaries></Meta><Root><Group><Name>Root</Name>
            <Entry><String><Key>Title</Key><Value>copy</Value></String><Binary><Key>empty</Key><Value Ref="0"/></Binary></Entry>
            </Group></Root></KeePassFile>
            """
        let r = try KeePassXML.read(Data(xml.utf8), file: "k.xml")
        let e = try #require(r.entry("copy"))
        #expect(e.file("empty")?.bytes == [])
    }
}

@Suite struct BitwardenAttachmentTests {
    @Test func listedAttachmentsAreWarnedAboutByName() throws {
        let json = """
            {"encrypted": false, "folders": [], "items": [
              {"type": 1, "name": "With files", "login": {"username": "u"},
               "attachments": [{"id": "a1", "fileName": "scan.pdf", "size": "1000"}, {"id": "a2", "fileName": "key.pem"}]},
              {"type": 2, "name": "One file", "secureNote": {"type": 0}, "attachments": [{"id": "a3", "fileName": "x.txt"}]},
              {"type": 2, "name": "No files", "secureNote": {"type": 0}, "attachments": []}
            ]}
            """
        let r = try BitwardenJSON.read(Data(json.utf8), file: "bw.json")
        #expect(r.entries.count == 3)
        #expect(r.warnings.count == 2, "\(r.warnings)")
        #expect(
            r.warnings[0].entry == "With files" && r.warnings[0].message.contains("its 2 attachments ('scan.pdf', 'key.pem') are not in Bitwarden's export"))
        #expect(
            r.warnings[1].entry == "One file" && r.warnings[1].message.contains("its attachment 'x.txt' is not in Bitwarden's export")
                && r.warnings[1].message.contains("coffer attach"))
    }
}
