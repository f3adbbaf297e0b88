import CofferTestSupport
import Foundation
import Testing

/// Attachments moving in and out through `coffer import --from` and
/// `coffer export --format … --plaintext`, as a user sees them
/// (docs/import-export.md#attachments). KeePass's reader is tested with
/// the keepass-xml format; the real programs in AttachmentsInteropTests.
@Suite struct AttachmentsCLITests {
    /// Every byte value and bytes that are not UTF-8.
    static let binary: [UInt8] = Array(0...255) + [0xFF, 0xFE, 0xC3, 0x28, 0x00]

    func file(_ home: TestHome, _ name: String, _ bytes: [UInt8]) -> String {
        let p = home.path(name)
        FileManager.default.createFile(atPath: p, contents: Data(bytes))
        return p
    }

    /// The bytes `coffer get NAME --field F --out FILE` saves, or nil.
    func saved(_ home: TestHome, _ item: String, _ field: String) -> [UInt8]? {
        let out = home.path("saved-\(UUID().uuidString.prefix(8))")
        let r = home.unlocked(["get", item, "--field", field, "--out", out])
        guard r.status == 0, let d = FileManager.default.contents(atPath: out) else { return nil }
        return [UInt8](d)
    }

    /// A 1PUX zip made with Python's zipfile: `export.data` plus members.
    func onePUX(_ home: TestHome, _ exportData: String, members: [String: String]) throws -> String {
        let zip = home.path("export-\(UUID().uuidString.prefix(6)).1pux")
        let data = file(home, "export.data", Array(exportData.utf8))
        var args = [
            "python3", "-c",
            """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1], 'w', compression=zipfile.ZIP_DEFLATED)
            z.writestr('export.attributes', '{"version": 3, "description": "1Password Unencrypted Export", "createdAt": 1700000000}')
            z.write(sys.argv[2], 'export.data')
            for i in range(3, len(sys.argv), 2):
                z.write(sys.argv[i + 1], sys.argv[i])
            z.close()
            """, zip, data,
        ]
        for (member, path) in members.sorted(by: { $0.key < $1.key }) { args += [member, path] }
        let py = Spawn.run("/usr/bin/env", args, stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        try #require(py.status == 0, "\(py)")
        return zip
    }

    /// export.data as 1Password documents it (support.1password.com/1pux-format/):
    /// a document item, a login with a file field, a document whose file is
    /// not in the zip and one larger than 16 MiB.
    static let exportData = """
        {"accounts": [{"attrs": {"accountName": "Zoë"}, "vaults": [{"attrs": {"name": "Private"}, "items": [
          {"uuid": "i1", "categoryUuid": "006", "state": "active", "overview": {"title": "Passport scan"},
           "details": {"notesPlain": "", "documentAttributes": {"fileName": "pässport.pdf", "documentId": "doc1", "decryptedSize": 261}}},
          {"uuid": "i2", "categoryUuid": "001", "state": "active", "overview": {"title": "GitHub", "url": "https://github.com"},
           "details": {"loginFields": [{"designation": "username", "value": "zoe"}, {"designation": "password", "value": "gh-pw", "fieldType": "P"}],
            "sections": [{"title": "2FA", "fields": [{"title": "recovery codes", "id": "f", "value": {"file": {"fileName": "codes.txt", "documentId": "doc2", "decryptedSize": 10}}}]}]}},
          {"uuid": "i3", "categoryUuid": "006", "state": "active", "overview": {"title": "Lost scan"},
           "details": {"documentAttributes": {"fileName": "lost.pdf", "documentId": "doc3"}}},
          {"uuid": "i4", "categoryUuid": "006", "state": "active", "overview": {"title": "Disk image"},
           "details": {"documentAttributes": {"fileName": "disk.img", "documentId": "doc4"}}}
        ]}]}]}
        """

    @Test func onePUXDocumentsAndFileFieldsBecomeAttachments() throws {
        let home = TestHome()
        home.initVault()
        let big = file(home, "big.img", [UInt8](repeating: 0, count: 16 * 1024 * 1024 + 1))
        let zip = try onePUX(
            home, Self.exportData,
            members: [
                "files/doc1__pässport.pdf": file(home, "p.pdf", Self.binary),
                "files/doc2__codes.txt": file(home, "c.txt", Array("1111\n2222\n".utf8)),
                "files/doc4__disk.img": big,
            ])
        let r = home.unlocked(["import", "--from", "1password-1pux", zip, "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "import-report.schema.json")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(report["added"] as? Int == 4)
        let warnings = try #require(report["warnings"] as? [[String: String]])
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.contains { $0["entry"] == "Private/Lost scan" && $0["message"]?.contains("document 'lost.pdf' was not imported") == true })
        #expect(warnings.contains { $0["entry"] == "Private/Disk image" && $0["message"]?.contains("16 MiB") == true })
        #expect(saved(home, "Private/Passport scan", "pässport.pdf") == Self.binary)
        #expect(saved(home, "Private/GitHub", "codes.txt") == Array("1111\n2222\n".utf8))
        #expect(home.unlocked(["get", "Private/GitHub", "--field", "password"]).out == "gh-pw")
        let shown = home.unlocked(["show", "Private/Passport scan"])
        #expect(shown.stdout.contains("pässport.pdf") && shown.stdout.contains("attachment"), "\(shown)")
        #expect(!shown.stdout.contains("%PDF") && !r.stdout.contains("1111"), "no value in listings or reports")
        // Human report: one line per warning, and the count.
        let before = home.vaultBytes()
        let again = home.unlocked(["import", "--from", "1password-1pux", zip])
        #expect(again.status == 0 && again.stderr.contains("0 added") && again.stderr.contains("4 identical"), "\(again)")
        #expect(again.stderr.contains("coffer: warning: 'Private/Lost scan': document 'lost.pdf' was not imported"))
        #expect(again.stderr.contains("2 warnings"))
        #expect(home.vaultBytes() == before, "importing the same file twice changes nothing")
        let verified = home.unlocked(["verify"])
        #expect(verified.status == 0, "\(verified)")
    }

    @Test func onePUXMalformedReferenceRefusesTheWholeImport() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "keep", "--type", "api-key"], stdin: "k").status == 0)
        let data = Self.exportData.replacingOccurrences(of: #""documentId": "doc3""#, with: #""documentId": "../doc3""#)
        let zip = try onePUX(home, data, members: ["files/doc1__pässport.pdf": file(home, "p.pdf", Self.binary)])
        let before = home.vaultBytes()
        let r = home.unlocked(["import", "--from", "1password-1pux", zip])
        #expect(r.status == 65, "\(r)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count <= 2 && lines.first?.hasPrefix("coffer: error: ") == true, "\(r.stderr)")
        #expect(
            lines.first?.contains("items[2] ('Private/Lost scan'): documentAttributes: documentId '../doc3' is not a plain identifier") == true, "\(r.stderr)")
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["ls"]).out == "keep" || home.unlocked(["ls"]).out.hasPrefix("keep "))
    }

    /// A zip whose directory says a member is 100 bytes while it inflates
    /// to 40 MiB: extraction stops at the 16 MiB limit (a warning), memory
    /// stays bounded, the other items are imported.
    @Test func onePUXMemberLyingAboutItsSizeStopsAtTheLimit() throws {
        let home = TestHome()
        home.initVault()
        let data = file(
            home, "export.data",
            Array(
                """
                {"accounts": [{"attrs": {}, "vaults": [{"attrs": {"name": "V"}, "items": [
                 {"uuid": "i", "categoryUuid": "006", "overview": {"title": "Bomb"}, "details": {"documentAttributes": {"fileName": "b.bin", "documentId": "d"}}},
                 {"uuid": "j", "categoryUuid": "001", "overview": {"title": "Ok"}, "details": {"loginFields": [{"designation": "password", "value": "x"}]}}]}]}]}
                """.utf8))
        let zip = home.path("bomb.1pux")
        let py = Spawn.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import sys, zipfile, struct
                z = zipfile.ZipFile(sys.argv[1], 'w', compression=zipfile.ZIP_DEFLATED)
                z.write(sys.argv[2], 'export.data')
                z.writestr('files/d__b.bin', b'\\0' * (40 * 1024 * 1024))
                z.close()
                data = bytearray(open(sys.argv[1], 'rb').read())
                name = b'files/d__b.bin'
                for sig, size_at, len_at, name_at in ((b'PK\\x03\\x04', 22, 26, 30), (b'PK\\x01\\x02', 24, 28, 46)):
                    i = data.find(sig)
                    while i >= 0:
                        n = struct.unpack_from('<H', data, i + len_at)[0]
                        if data[i + name_at:i + name_at + n] == name:
                            struct.pack_into('<I', data, i + size_at, 100)
                        i = data.find(sig, i + 4)
                open(sys.argv[1], 'wb').write(data)
                """, zip, data,
            ], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        try #require(py.status == 0, "\(py)")
        let r = home.unlocked(["import", "--from", "1password-1pux", zip])
        #expect(r.status == 0, "\(r)")
        #expect(
            r.stderr.contains("'V/Bomb': document 'b.bin' was not imported: it is larger than the 16 MiB a field may hold (keep it elsewhere)"),
            "the directory's size was not trusted: \(r)")
        #expect(r.stderr.contains("2 added") && r.stderr.contains("1 warning"))
        #expect(home.unlocked(["get", "V/Ok", "--field", "password"]).out == "x")
    }

    /// A member whose bytes do not match its CRC: the archive is damaged,
    /// the import is refused whole (exit 65) naming the item and the file.
    @Test func onePUXDamagedMemberRefusesTheWholeImport() throws {
        let home = TestHome()
        home.initVault()
        let data = file(
            home, "export.data",
            Array(
                """
                {"accounts": [{"attrs": {}, "vaults": [{"attrs": {"name": "V"}, "items": [
                 {"uuid": "j", "categoryUuid": "001", "overview": {"title": "Ok"}, "details": {"loginFields": [{"designation": "password", "value": "x"}]}},
                 {"uuid": "i", "categoryUuid": "006", "overview": {"title": "Scan"}, "details": {"documentAttributes": {"fileName": "s.pdf", "documentId": "d"}}}]}]}]}
                """.utf8))
        let zip = home.path("damaged.1pux")
        let py = Spawn.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import sys, zipfile
                z = zipfile.ZipFile(sys.argv[1], 'w', compression=zipfile.ZIP_STORED)
                z.write(sys.argv[2], 'export.data')
                z.writestr('files/d__s.pdf', b'A' * 1000)
                z.close()
                raw = open(sys.argv[1], 'rb').read()
                open(sys.argv[1], 'wb').write(raw.replace(b'A' * 1000, b'B' + b'A' * 999))
                """, zip, data,
            ], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        try #require(py.status == 0, "\(py)")
        let before = home.vaultBytes()
        let r = home.unlocked(["import", "--from", "1password-1pux", zip])
        #expect(r.status == 65, "\(r)")
        let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(
            first.hasPrefix("coffer: error: ") && first.contains("('V/Scan'): document 's.pdf': the archive member files/d__s.pdf cannot be extracted"),
            "\(r.stderr)")
        #expect(r.stderr.contains("coffer: hint: the archive is damaged"))
        #expect(home.vaultBytes() == before)
    }

    @Test func cofferJSONCarriesAttachmentsLosslessly() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "ssh/deploy", "--type", "custom", "--field", "host=example.com"]).status == 0)
        #expect(home.unlocked(["attach", "ssh/deploy", file(home, "id_ed25519", [1, 2, 3])]).status == 0)
        #expect(home.unlocked(["attach", "ssh/deploy", file(home, "id_ed25519", Self.binary)]).status == 0)
        #expect(home.unlocked(["attach", "ssh/deploy", file(home, "empty", []), "--as", "empty.bin"]).status == 0)
        let out = home.path("all.json")
        let ex = home.unlocked(["export", "--format", "json", "--plaintext", "--history", "--out", out])
        #expect(ex.status == 0, "\(ex)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        SchemaValidation.expectValid(text, schema: "coffer-export.schema.json")
        #expect(text.contains(Data(Self.binary).base64EncodedString()) && text.contains("\"version\" : 2"))

        let other = TestHome()
        other.initVault()
        let r = other.unlocked(["import", "--from", "coffer-json", out])
        #expect(r.status == 0, "\(r)")
        #expect(saved(other, "ssh/deploy", "id_ed25519") == Self.binary)
        #expect(saved(other, "ssh/deploy", "empty.bin") == [])
        #expect(other.unlocked(["get", "ssh/deploy", "--field", "host"]).out == "example.com")
        // The earlier attachment is in the history, and exports back equal.
        let back = other.path("back.json")
        #expect(other.unlocked(["export", "--format", "json", "--plaintext", "--history", "--out", back]).status == 0)
        func fieldsAndHistory(_ p: String) throws -> NSArray {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: p))) as? [String: Any])
            let items = try #require(o["items"] as? [[String: Any]])
            return NSArray(array: items.map { [$0["fields"] as Any, ($0["history"] as? [[String: Any]])?.map { $0["fields"] as Any } as Any] })
        }
        let a = try fieldsAndHistory(out)
        let b = try fieldsAndHistory(back)
        #expect(a.isEqual(b), "\(a)\n\(b)")
        #expect(String(describing: a).contains("AQID"), "the first attachment (bytes 1 2 3) is in the history")
        // A second import changes nothing.
        let before = other.vaultBytes()
        let second = other.unlocked(["import", "--from", "coffer-json", out, "--json"])
        #expect(second.status == 0 && second.stdout.contains("\"identical\" : 1"), "\(second)")
        #expect(other.vaultBytes() == before)
        #expect(other.unlocked(["verify"]).status == 0)
    }

    @Test func csvExportWarnsPerItemAndCounts() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "a", "--type", "api-key"], stdin: "sk-a").status == 0)
        #expect(home.unlocked(["attach", "a", file(home, "one.bin", Self.binary)]).status == 0)
        #expect(home.unlocked(["attach", "a", file(home, "two.bin", [9])]).status == 0)
        #expect(home.unlocked(["add", "b", "--type", "api-key"], stdin: "sk-b").status == 0)
        #expect(home.unlocked(["add", "c", "--type", "note"], stdin: "n").status == 0)
        #expect(home.unlocked(["attach", "c", file(home, "scan.pdf", [1])]).status == 0)
        let out = home.path("x.csv")
        let r = home.unlocked(["export", "--format", "csv", "--plaintext", "--out", out])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("coffer: warning: 'a': attachments 'one.bin', 'two.bin' were not exported: a CSV holds text only"), "\(r)")
        #expect(r.stderr.contains("coffer: warning: 'c': attachment 'scan.pdf' was not exported"))
        #expect(!r.stderr.contains("'b':"))
        #expect(r.stderr.contains("2 items had attachments that csv cannot hold"))
        let csv = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!csv.contains("one.bin") && !csv.contains("scan.pdf") && csv.contains("sk-a"))
        // The keepass-xml and json exports carry them: no such warning.
        let xml = home.unlocked(["export", "--format", "keepass-xml", "--plaintext", "--out", home.path("x.xml")])
        #expect(xml.status == 0 && !xml.stderr.contains("not exported"), "\(xml)")
    }

    @Test func bitwardenAttachmentsAreNamedForMovingByHand() throws {
        let home = TestHome()
        home.initVault()
        let json = """
            {"encrypted": false, "folders": [], "items": [
              {"type": 1, "name": "Bank", "login": {"username": "u", "password": "p"},
               "attachments": [{"id": "a1", "fileName": "statement.pdf", "size": "1000", "sizeName": "1 KB"}]},
              {"type": 1, "name": "Mail", "login": {"username": "m"}}
            ]}
            """
        let path = file(home, "bw.json", Array(json.utf8))
        let r = home.unlocked(["import", "--from", "bitwarden-json", path, "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "import-report.schema.json")
        #expect(r.stdout.contains("its attachment 'statement.pdf' is not in Bitwarden's export"), "\(r)")
        #expect(r.stdout.contains("\"added\" : 2"))
    }
}
