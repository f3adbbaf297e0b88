import CofferTestSupport
import Foundation
import Testing

/// Imports and exports checked against the real programs: a pass store
/// made by `pass insert` with a fresh gpg key, a KeePassXC database made by
/// `keepassxc-cli`, and Coffer's keepass-xml read back by `keepassxc-cli`.
/// Run by `make test-interop` (COFFER_INTEROP=1).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct PassKeePassInteropTests {
    /// Runs a tool in the test home's environment plus `extra`.
    @discardableResult
    func tool(_ home: TestHome, _ args: [String], stdin: String? = nil, env extra: [String: String] = [:]) -> CLIResult {
        var env = home.environment
        env["QT_QPA_PLATFORM"] = "offscreen"
        for (k, v) in extra { env[k] = v }
        return Spawn.run("/usr/bin/env", args, stdin: stdin, fd3: nil, environment: env, workDir: home.root.path)
    }

    func get(_ home: TestHome, _ name: String, _ field: String, env: [String: String] = [:]) -> String? {
        let r = home.unlocked(["get", name, "--field", field], env: env)
        return r.status == 0 ? r.out : nil
    }

    @Test func passStoreImportedValueByValue() throws {
        let home = TestHome()
        home.initVault()
        let env = try home.gpgKey()
        defer { tool(home, ["gpgconf", "--kill", "all"], env: env) }
        try #require(tool(home, ["pass", "init", "interop@coffer.invalid"], env: env).status == 0)
        let entries: [(String, String)] = [
            (
                "web/github",
                "gh-pässword\nlogin: alice\nurl: https://github.com\notpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP\nrecovery code: 1111-2222\nfree text line\n"
            ),
            ("émoji/ключ ☕", "Ünïcode-секрет\n"),
            ("servers/db", "db-pass\nuser: postgres\n\nfirst note\nsecond note\n"),
            ("empty-password", "\nnotes only\n"),
        ]
        for (name, text) in entries {
            let r = tool(home, ["pass", "insert", "--multiline", name], stdin: text, env: env)
            try #require(r.status == 0, "\(r)")
        }
        let r = home.unlocked(["import", "--from", "pass", "--prefix", "pass"], env: env)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("4 added"))
        // Every value equals what `pass show` prints.
        #expect(get(home, "pass/web/github", "password") == "gh-pässword")
        #expect(get(home, "pass/web/github", "username") == "alice")
        #expect(get(home, "pass/web/github", "url") == "https://github.com")
        #expect(get(home, "pass/web/github", "totp") == "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP")
        #expect(get(home, "pass/web/github", "recovery code") == "1111-2222")
        #expect(get(home, "pass/web/github", "notes") == "free text line")
        #expect(get(home, "pass/émoji/ключ ☕", "password") == "Ünïcode-секрет")
        #expect(get(home, "pass/servers/db", "username") == "postgres")
        #expect(get(home, "pass/servers/db", "notes") == "\nfirst note\nsecond note")
        #expect(get(home, "pass/empty-password", "notes") == "notes only")
        for (name, _) in entries {
            let shown = tool(home, ["pass", "show", name], env: env)
            let first = shown.stdout.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if !first.isEmpty { #expect(get(home, "pass/" + name, "password") == first) }
        }
        // Twice: nothing changes.
        let before = home.vaultBytes()
        let again = home.unlocked(["import", "--from", "pass", "--prefix", "pass"], env: env)
        #expect(again.status == 0 && again.stderr.contains("0 added"), "\(again)")
        #expect(home.vaultBytes() == before)
        // A store whose key is gone: a clear error, nothing imported.
        let other = TestHome()
        other.initVault()
        let noKey = other.unlocked(["import", "--from", "pass", home.path("store")], env: ["GNUPGHOME": other.path("empty-gnupg")])
        #expect(noKey.status == 65 && noKey.stderr.contains("cannot decrypt"), "\(noKey)")
        #expect(other.unlocked(["ls"]).out.isEmpty)
    }

    /// KeePassXC's database made by keepassxc-cli (groups, custom
    /// attributes, TOTP and an attachment, through `keepassxc-cli import`
    /// and `attachment-import`), exported to XML and imported, and read
    /// directly as kdbx: every value, and the attachment's bytes, equal.
    @Test func keepassXCDatabaseImported() throws {
        let home = TestHome()
        home.initVault()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Meta><Generator>test</Generator></Meta><Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Root</Name>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Name>Work</Name>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID><Name>Cloud ☁</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAABA==</UUID><Tags>prod;ops</Tags>
            <Times><ExpiryTime>2031-03-04T00:00:00Z</ExpiryTime><Expires>True</Expires></Times>
            <String><Key>Title</Key><Value>AWS</Value></String>
            <String><Key>UserName</Key><Value>admin</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">aws-pässword</Value></String>
            <String><Key>URL</Key><Value>https://aws.amazon.com</Value></String>
            <String><Key>Notes</Key><Value>line one
            line two</Value></String>
            <String><Key>access key</Key><Value ProtectInMemory="True">AKIAEXAMPLE</Value></String>
            <String><Key>region</Key><Value>eu-west-1</Value></String>
            <String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/AWS:admin?secret=JBSWY3DPEHPK3PXP&amp;period=30&amp;digits=6</Value></String>
            </Entry></Group></Group>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAABQ==</UUID>
            <String><Key>Title</Key><Value>Top level</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">top</Value></String>
            </Entry>
            </Group></Root></KeePassFile>
            """
        let source = home.path("source.xml")
        FileManager.default.createFile(atPath: source, contents: Data(xml.utf8))
        let db = home.path("made.kdbx")
        let made = tool(home, ["keepassxc-cli", "import", "-p", "-t", "100", source, db], stdin: "dbpw\ndbpw\n")
        try #require(made.status == 0, "\(made)")
        // Binary, and large enough that keepassxc-cli's gzip matters.
        let attachment = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) } + [0, 1, 2, 255])
        FileManager.default.createFile(atPath: home.path("id.bin"), contents: attachment)
        let attached = tool(home, ["keepassxc-cli", "attachment-import", db, "Work/Cloud ☁/AWS", "id.bin", home.path("id.bin")], stdin: "dbpw\n")
        try #require(attached.status == 0, "\(attached)")
        try FileManager.default.removeItem(atPath: source)
        let exported = tool(home, ["keepassxc-cli", "export", "--format", "xml", db], stdin: "dbpw\n")
        try #require(exported.status == 0, "\(exported)")
        let xmlPath = home.path("export.xml")
        FileManager.default.createFile(atPath: xmlPath, contents: Data(exported.stdout.utf8))

        func check(_ prefix: String, _ r: CLIResult) {
            #expect(r.status == 0, "\(r)")
            #expect(!r.stderr.contains("warning"), "\(r)")
            let aws = "\(prefix)/Work/Cloud ☁/AWS"
            // The attachment (keepassxc-cli's gzip-compressed pool binary)
            // saves back with the bytes that went in.
            let out = home.path("\(prefix)-id.bin")
            let saved = home.unlocked(["get", aws, "--field", "id.bin", "--out", out])
            #expect(saved.status == 0, "\(saved)")
            #expect(FileManager.default.contents(atPath: out) == attachment)
            #expect(get(home, aws, "username") == "admin")
            #expect(get(home, aws, "password") == "aws-pässword")
            #expect(get(home, aws, "url") == "https://aws.amazon.com")
            #expect(get(home, aws, "notes") == "line one\nline two")
            #expect(get(home, aws, "access key") == "AKIAEXAMPLE")
            #expect(get(home, aws, "region") == "eu-west-1")
            #expect(get(home, aws, "totp") == "otpauth://totp/AWS:admin?secret=JBSWY3DPEHPK3PXP&period=30&digits=6")
            let item = home.unlocked(["get", aws, "--json"]).stdout
            #expect(item.contains("\"2031-03-04\"") && item.contains("\"ops\"") && item.contains("\"prod\""))
            #expect(get(home, "\(prefix)/Top level", "password") == "top")
        }
        check("xml", home.unlocked(["import", "--from", "keepass-xml", xmlPath, "--prefix", "xml"]))
        let pw = home.path("dbpw")
        FileManager.default.createFile(atPath: pw, contents: Data("dbpw\n".utf8))
        check("kdbx", home.unlocked(["import", "--from", "kdbx", db, "--prefix", "kdbx", "--source-passphrase-file", pw]))
        let wrong = home.path("wrong")
        FileManager.default.createFile(atPath: wrong, contents: Data("nope\n".utf8))
        let before = home.vaultBytes()
        let refused = home.unlocked(["import", "--from", "kdbx", db, "--source-passphrase-file", wrong])
        #expect(refused.status == 77 && refused.stderr.contains("does not open"), "\(refused)")
        #expect(home.vaultBytes() == before)
    }

    /// Coffer's keepass-xml export, imported by `keepassxc-cli import`, read
    /// back with `keepassxc-cli show`: every value equal.
    @Test func cofferExportReadByKeePassXC() throws {
        let home = TestHome()
        home.initVault()
        #expect(
            home.unlocked(
                [
                    "add", "work/github", "--type", "login", "--field", "username=alice", "--url", "https://github.com", "--field", "notes=two\nlines",
                    "--field", "totp=otpauth://totp/GH?secret=JBSWY3DPEHPK3PXP", "--secret", "password",
                ], stdin: "gh-pässword <&>"
            ).status == 0)
        #expect(home.unlocked(["add", "api/openai", "--type", "api-key", "--tag", "ai"], stdin: "sk-ключ-123").status == 0)
        #expect(home.unlocked(["add", "svc", "--type", "custom", "--field", "region=eu", "--field", "token=t0k3n"]).status == 0)
        // An attachment makes the whole trip too: Coffer → KeePass XML →
        // keepassxc-cli's database → Coffer (read as kdbx), bytes equal.
        let key = Data((0..<50_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) } + [0, 0xFF, 0xC3, 0x28])
        FileManager.default.createFile(atPath: home.path("deploy.key"), contents: key)
        #expect(home.unlocked(["attach", "svc", home.path("deploy.key")]).status == 0)
        let xml = home.path("coffer.xml")
        let ex = home.unlocked(["export", "--format", "keepass-xml", "--plaintext", "--out", xml])
        try #require(ex.status == 0, "\(ex)")
        let db = home.path("from-coffer.kdbx")
        let imp = tool(home, ["keepassxc-cli", "import", "-p", "-t", "100", xml, db], stdin: "pw\npw\n")
        try #require(imp.status == 0, "\(imp)")
        func show(_ entry: String, _ attr: String) -> String? {
            let r = tool(home, ["keepassxc-cli", "show", "-q", "-s", "-a", attr, db, entry], stdin: "pw\n")
            return r.status == 0 ? r.out : nil
        }
        #expect(show("work/github", "UserName") == "alice")
        #expect(show("work/github", "Password") == "gh-pässword <&>")
        #expect(show("work/github", "URL") == "https://github.com")
        #expect(show("work/github", "Notes") == "two\nlines")
        #expect(show("work/github", "otp") == "otpauth://totp/GH?secret=JBSWY3DPEHPK3PXP")
        // An api-key's key is the entry's Password (as in a kdbx export).
        #expect(show("api/openai", "Password") == "sk-ключ-123")
        #expect(show("api/openai", "CofferType") == "api-key")
        #expect(show("svc", "region") == "eu")
        #expect(show("svc", "token") == "t0k3n")
        // And back again: the database exported by KeePassXC imports equal.
        let back = tool(home, ["keepassxc-cli", "export", "--format", "xml", db], stdin: "pw\n")
        try #require(back.status == 0)
        let backPath = home.path("back.xml")
        FileManager.default.createFile(atPath: backPath, contents: Data(back.stdout.utf8))
        let r = home.unlocked(["import", "--from", "keepass-xml", backPath, "--prefix", "back"])
        #expect(r.status == 0, "\(r)")
        #expect(get(home, "back/work/github", "password") == "gh-pässword <&>")
        #expect(get(home, "back/api/openai", "key") == "sk-ключ-123")
        #expect(get(home, "back/svc", "token") == "t0k3n")
        let pw = home.path("pw")
        FileManager.default.createFile(atPath: pw, contents: Data("pw\n".utf8))
        let fromDB = home.unlocked(["import", "--from", "kdbx", db, "--prefix", "kdbx", "--source-passphrase-file", pw])
        #expect(fromDB.status == 0 && !fromDB.stderr.contains("warning"), "\(fromDB)")
        for prefix in ["back", "kdbx"] {
            let out = home.path("\(prefix)-deploy.key")
            #expect(home.unlocked(["get", "\(prefix)/svc", "--field", "deploy.key", "--out", out]).status == 0)
            #expect(FileManager.default.contents(atPath: out) == key, "\(prefix)")
        }
    }
}
