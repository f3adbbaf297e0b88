import CofferTestSupport
import Foundation
import Testing

/// KeePass attachments through `coffer import --from keepass-xml` as a user
/// sees them: saved back with `coffer get --field F --out FILE` byte for
/// byte, too large ones named in a warning and counted, bad data refused
/// whole (docs/import-export.md#keepass-xml).
@Suite struct KeePassAttachmentCLITests {
    /// gzip of `bytes`, made by the system's gzip program.
    static func gzip(_ bytes: [UInt8], in home: TestHome) -> [UInt8] {
        let input = home.path("gz-input")
        FileManager.default.createFile(atPath: input, contents: Data(bytes))
        let r = Spawn.run(
            "/usr/bin/env", ["sh", "-c", "gzip -c -n gz-input | base64 -w0"], stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        return [UInt8](Data(base64Encoded: r.out) ?? Data())
    }

    static func xml(pool: String, entries: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <KeePassFile><Meta><Binaries>\(pool)</Binaries></Meta><Root><Group><Name>Root</Name><Group><Name>Keys</Name>
        \(entries)
        </Group></Group></Root></KeePassFile>
        """
    }

    static func entry(_ title: String, _ binaries: [(String, Int)]) -> String {
        "<Entry><String><Key>Title</Key><Value>\(title)</Value></String><String><Key>UserName</Key><Value>me</Value></String>"
            + binaries.map { "<Binary><Key>\($0.0)</Key><Value Ref=\"\($0.1)\"/></Binary>" }.joined() + "</Entry>"
    }

    @Test func attachmentsImportAsFilesAndSaveBackByteForByte() throws {
        let home = TestHome()
        home.initVault()
        let key: [UInt8] = Array("-----BEGIN OPENSSH PRIVATE KEY-----\n".utf8) + (0...255).map { UInt8($0) }
        let pdf: [UInt8] = [0x25, 0x50, 0x44, 0x46, 0, 0xFF, 0x0D, 0x0A]
        let pool = """
            <Binary ID="0" Compressed="True">\(Data(Self.gzip(key, in: home)).base64EncodedString())</Binary>
            <Binary ID="1">\(Data(pdf).base64EncodedString())</Binary>
            <Binary ID="2" Compressed="True">\(Data(Self.gzip([UInt8](repeating: 0, count: 17 * 1024 * 1024), in: home)).base64EncodedString())</Binary>
            """
        let entries = Self.entry("server", [("id_ed25519", 0), ("codes.pdf", 1)]) + Self.entry("backup", [("disk.img", 2), ("codes.pdf", 1)])
        let file = home.path("k.xml")
        FileManager.default.createFile(atPath: file, contents: Data(Self.xml(pool: pool, entries: entries).utf8))
        let r = home.unlocked(["import", "--from", "keepass-xml", file, "--json"])
        #expect(r.status == 0, "\(r)")
        SchemaValidation.expectValid(r.stdout, schema: "import-report.schema.json")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(report["added"] as? Int == 2)
        let warnings = report["warnings"] as? [[String: Any]] ?? []
        #expect(warnings.count == 1)
        #expect(warnings.first?["entry"] as? String == "Keys/backup")
        #expect((warnings.first?["message"] as? String)?.contains("attachment 'disk.img' was not imported") == true)

        for (item, field, bytes) in [("Keys/server", "id_ed25519", key), ("Keys/server", "codes.pdf", pdf), ("Keys/backup", "codes.pdf", pdf)] {
            let out = home.path("\(field).out")
            try? FileManager.default.removeItem(atPath: out)
            let got = home.unlocked(["get", item, "--field", field, "--out", out])
            #expect(got.status == 0, "\(got)")
            #expect(FileManager.default.contents(atPath: out).map([UInt8].init) == bytes, "\(item) \(field)")
        }
        let shown = home.unlocked(["show", "Keys/server"])
        #expect(shown.stdout.contains("(attachment"), "\(shown)")
        #expect(home.unlocked(["get", "Keys/backup", "--field", "disk.img"]).status == 66)

        // The summary counts the warning; a second import changes nothing.
        let before = home.vaultBytes()
        let again = home.unlocked(["import", "--from", "keepass-xml", file])
        #expect(again.status == 0 && again.stderr.contains("0 added") && again.stderr.contains("2 identical") && again.stderr.contains("1 warning"), "\(again)")
        #expect(again.stderr.contains("coffer: warning: 'Keys/backup': attachment 'disk.img' was not imported"), "\(again)")
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["verify"]).status == 0)
    }

    @Test(arguments: [
        ("<Binary ID=\"0\">not*base64</Binary>", "not valid base64"),
        ("<Binary ID=\"0\" Compressed=\"True\">\(Data("plain".utf8).base64EncodedString())</Binary>", "not valid gzip"),
    ])
    func badAttachmentDataRefusesTheWholeImport(pool: String, message: String) {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "keep", "--type", "api-key"], stdin: "k").status == 0)
        let file = home.path("k.xml")
        let entries = Self.entry("fine", []) + "\n" + Self.entry("server", [("id_ed25519", 0)])
        FileManager.default.createFile(atPath: file, contents: Data(Self.xml(pool: pool, entries: entries).utf8))
        let before = home.vaultBytes()
        let r = home.unlocked(["import", "--from", "keepass-xml", file])
        #expect(r.status == 65, "\(r)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.first?.hasPrefix("coffer: error: \(file): line 4 (entry 'Keys/server'): attachment 'id_ed25519': ") == true, "\(r)")
        #expect(lines.first?.contains(message) == true, "\(r)")
        #expect(lines.count <= 2)
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["ls"]).out == "keep" || home.unlocked(["ls"]).out.hasPrefix("keep "))
    }
}

/// `--from keepass-xml` parses on a second thread while it stores: an error
/// late in a large file still leaves the vault as it was.
@Suite struct KeePassStreamedImportCLITests {
    static func file(entries: Int, tail: String) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<KeePassFile><Meta/><Root><Group><Name>Root</Name><Group><Name>g</Name>\n"
        for i in 0..<entries {
            xml +=
                "<Entry><String><Key>Title</Key><Value>e\(i)</Value></String><String><Key>Password</Key><Value ProtectInMemory=\"True\">pw\(i)</Value></String></Entry>\n"
        }
        return xml + tail
    }

    @Test func anErrorAfterThousandsOfStoredEntriesLeavesTheVaultUnchanged() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "keep", "--type", "api-key"], stdin: "k").status == 0)
        let before = home.vaultBytes()
        for (name, tail, message) in [
            ("truncated.xml", "</Group>", "truncated.xml: line 3003: malformed XML"),
            (
                "bad-attachment.xml",
                "<Entry><String><Key>Title</Key><Value>last</Value></String><Binary><Key>k</Key><Value>%%%not base64%%%</Value></Binary></Entry></Group></Group></Root></KeePassFile>\n",
                "(entry 'g/last'): attachment 'k'"
            ),
            (
                "bad-tag.xml",
                "<Entry><Tags>one\ntwo</Tags><String><Key>Title</Key><Value>last</Value></String></Entry></Group></Group></Root></KeePassFile>\n",
                "(entry 'g/last'): invalid tag"
            ),
        ] {
            let path = home.path(name)
            FileManager.default.createFile(atPath: path, contents: Data(Self.file(entries: 3000, tail: tail).utf8))
            let r = home.unlocked(["import", "--from", "keepass-xml", path])
            #expect(r.status == 65, "\(name): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: ") && r.stderr.contains(message), "\(name): \(r.stderr)")
            #expect(home.vaultBytes() == before, "\(name)")
        }
        #expect(home.unlocked(["ls"]).out.split(separator: "\n").count == 1)
        // The same entries, well formed, all arrive (3,000: more than the
        // reader may be ahead), and a second import finds them identical.
        let good = home.path("good.xml")
        FileManager.default.createFile(atPath: good, contents: Data(Self.file(entries: 3000, tail: "</Group></Group></Root></KeePassFile>\n").utf8))
        let r = home.unlocked(["import", "--from", "keepass-xml", good])
        #expect(r.status == 0 && r.stderr.contains("3000 added"), "\(r)")
        #expect(home.unlocked(["get", "g/e2999", "--field", "password"]).out == "pw2999")
        let again = home.unlocked(["import", "--from", "keepass-xml", good, "--dry-run"])
        #expect(again.status == 0 && again.stderr.contains("0 added") && again.stderr.contains("3000 identical"), "\(again)")
        #expect(home.unlocked(["verify"]).status == 0)
    }
}

/// Issue 24 item 9: an entity declared in the file's DTD is not expanded
/// (coffer never reads a DTD: no external entity, no entity expansion
/// bomb), and its text used to vanish from the value without a word. Each
/// entry that uses one is named in a warning; the entity's text is not
/// printed, nor any value.
@Suite struct KeePassDTDEntityCLITests {
    static let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE KeePassFile [
          <!ENTITY company "Acme-Corp-Secret-Text">
          <!ENTITY % param "unused">
        ]>
        <KeePassFile><Meta/><Root><Group><Name>Root</Name><Group><Name>Work</Name>
        <Entry><String><Key>Title</Key><Value>plain</Value></String><String><Key>Password</Key><Value>pw-plain</Value></String></Entry>
        <Entry><String><Key>Title</Key><Value>mail</Value></String><String><Key>UserName</Key><Value>me@&company;.example</Value></String><String><Key>Password</Key><Value>pw-mail</Value></String>
        <History><Entry><String><Key>Title</Key><Value>mail</Value></String><String><Key>Password</Key><Value>old</Value></String></Entry></History></Entry>
        <Entry><String><Key>Title</Key><Value>amp</Value></String><String><Key>Password</Key><Value>a&amp;b&#33;</Value></String></Entry>
        <Entry><String><Key>Title</Key><Value>old</Value></String><String><Key>Password</Key><Value>pw-old</Value></String>
        <History><Entry><String><Key>Title</Key><Value>old</Value></String><String><Key>Notes</Key><Value>from &company;</Value></String></Entry></History></Entry>
        </Group></Group></Root></KeePassFile>
        """

    @Test func anEntryUsingADTDEntityIsNamedInAWarning() throws {
        let home = TestHome()
        home.initVault()
        let file = home.path("dtd.xml")
        FileManager.default.createFile(atPath: file, contents: Data(Self.xml.utf8))
        let r = home.unlocked(["import", "--from", "keepass-xml", file])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("4 added") && r.stderr.contains("2 warnings"), "\(r)")
        let warnings = r.stderr.split(separator: "\n").filter { $0.hasPrefix("coffer: warning: ") }
        #expect(warnings.count == 2, "\(r)")
        #expect(warnings.contains { $0.hasPrefix("coffer: warning: 'Work/mail': ") && $0.contains("'company'") }, "\(r)")
        #expect(warnings.contains { $0.hasPrefix("coffer: warning: 'Work/old': ") && $0.contains("'company'") }, "\(r)")
        #expect(!r.stderr.contains("Acme-Corp") && !r.stdout.contains("Acme-Corp") && !r.stderr.contains("pw-"), "\(r)")
        #expect(home.unlocked(["get", "Work/amp"]).out == "a&b!")

        let other = TestHome()
        other.initVault()
        let j = other.unlocked(["import", "--from", "keepass-xml", file, "--json"])
        #expect(j.status == 0, "\(j)")
        SchemaValidation.expectValid(j.stdout, schema: "import-report.schema.json")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any])
        let entries = (report["warnings"] as? [[String: Any]] ?? []).compactMap { $0["entry"] as? String }.sorted()
        #expect(entries == ["Work/mail", "Work/old"], "\(j)")
    }
}
