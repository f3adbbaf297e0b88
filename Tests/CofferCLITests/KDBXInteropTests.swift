import CofferTestSupport
import Foundation
import Testing

/// KDBX in and out against the real programs: databases made by
/// KeePassXC 2.7's `keepassxc-cli` (and pykeepass, for what keepassxc-cli
/// cannot set: Argon2 KDBX 4, tags, expiry) read by Coffer's native reader
/// with keepassxc-cli NOT on PATH; Coffer's `export --format kdbx` read back
/// by `keepassxc-cli show`/`attachment-export` and by pykeepass. Run by
/// `make test-interop` (COFFER_INTEROP=1; Debian packages keepassxc and
/// python3-pykeepass).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct KDBXInteropTests {
    static let python = "/usr/bin/python3"

    @discardableResult
    func tool(_ home: TestHome, _ args: [String], stdin: String? = nil) -> CLIResult {
        var env = home.environment
        env["QT_QPA_PLATFORM"] = "offscreen"
        return Spawn.run("/usr/bin/env", args, stdin: stdin, fd3: nil, environment: env, workDir: home.root.path)
    }

    func get(_ home: TestHome, _ name: String, _ field: String) -> String? {
        let r = home.unlocked(["get", name, "--field", field])
        return r.status == 0 ? r.out : nil
    }

    func file(_ home: TestHome, _ name: String, _ data: Data) -> String {
        let p = home.path(name)
        FileManager.default.createFile(atPath: p, contents: data)
        return p
    }

    /// `coffer import --from kdbx` with no keepassxc-cli to be found.
    func importWithoutKeePassXC(_ home: TestHome, _ db: String, prefix: String) -> CLIResult {
        let empty = home.path("empty-path")
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let pw = file(home, "dbpw", Data("dbpw\n".utf8))
        return home.unlocked(["import", "--from", "kdbx", db, "--prefix", prefix, "--source-passphrase-file", pw], env: ["PATH": empty])
    }

    static let attachment = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) } + [0, 1, 2, 255])

    @Test(.timeLimit(.minutes(3))) func argon2KDBX4FromKeePassXCComesInWhole() throws {
        let home = TestHome()
        home.initVault()
        let db = home.path("argon2.kdbx")
        // pykeepass makes the KDBX 4 / Argon2d database (keepassxc-cli 2.7.4's
        // db-create writes KDBX 3.1 with AES-KDF) and sets tags, expiry, TOTP.
        let make = """
            import sys, datetime
            from pykeepass import create_database
            kp = create_database(sys.argv[1], password='dbpw')
            g = kp.add_group(kp.root_group, 'Work')
            e = kp.add_entry(g, 'GitHub', 'alice', 'first-pw', url='https://github.com', notes='line one\\nline two',
                tags=['work', 'git'], expiry_time=datetime.datetime(2031, 5, 6, 12, 0, tzinfo=datetime.timezone.utc),
                otp='otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&period=30&digits=6')
            e.expires = True
            e.set_custom_property('team', 'platform')
            kp.save()
            """
        let made = tool(home, [Self.python, "-c", make, db])
        try #require(made.status == 0, "\(made)")
        // keepassxc-cli edits it twice (two history entries) and attaches a file.
        for pw in ["second-pw", "third-pw"] {
            let r = tool(home, ["keepassxc-cli", "edit", "-p", db, "Work/GitHub"], stdin: "dbpw\n\(pw)\n\(pw)\n")
            try #require(r.status == 0, "\(r)")
        }
        let bin = file(home, "id.bin", Self.attachment)
        let att = tool(home, ["keepassxc-cli", "attachment-import", db, "Work/GitHub", "id.bin", bin], stdin: "dbpw\n")
        try #require(att.status == 0, "\(att)")
        let info = tool(home, ["keepassxc-cli", "db-info", db], stdin: "dbpw\n")
        try #require(info.stdout.contains("Argon2"), "\(info)")
        let header = try #require(FileManager.default.contents(atPath: db))
        #expect(Array(header[10..<12]) == [4, 0], "KDBX 4")

        let r = importWithoutKeePassXC(home, db, prefix: "kx")
        #expect(r.status == 0, "\(r)")
        let name = "kx/Work/GitHub"
        #expect(get(home, name, "username") == "alice")
        #expect(get(home, name, "password") == "third-pw")
        #expect(get(home, name, "url") == "https://github.com")
        #expect(get(home, name, "notes") == "line one\nline two")
        #expect(get(home, name, "team") == "platform")
        #expect(get(home, name, "totp") == "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&period=30&digits=6")
        #expect(home.unlocked(["otp", name]).status == 0)
        let out = home.path("back.bin")
        #expect(home.unlocked(["get", name, "--field", "id.bin", "--out", out]).status == 0)
        #expect(FileManager.default.contents(atPath: out) == Self.attachment)
        let json = home.unlocked(["get", name, "--json"]).stdout
        #expect(json.contains("\"2031-05-06\"") && json.contains("\"work\"") && json.contains("\"git\""), "\(json)")
        // The earlier passwords are in the item's history.
        let history = home.unlocked(["history", name, "--show-secrets"])
        #expect(history.stdout.contains("first-pw") && history.stdout.contains("second-pw"), "\(history)")
    }

    @Test(.timeLimit(.minutes(3))) func kdbx41MadeByMoveComesIn() throws {
        let home = TestHome()
        home.initVault()
        let db = home.path("moved.kdbx")
        try #require(tool(home, ["keepassxc-cli", "db-create", "-p", db], stdin: "dbpw\ndbpw\n").status == 0)
        try #require(tool(home, ["keepassxc-cli", "mkdir", db, "Mail"], stdin: "dbpw\n").status == 0)
        try #require(tool(home, ["keepassxc-cli", "add", "-u", "bob", "-p", db, "Box"], stdin: "dbpw\nbox-pässword\n").status == 0)
        try #require(tool(home, ["keepassxc-cli", "mv", db, "Box", "Mail"], stdin: "dbpw\n").status == 0)
        let bin = file(home, "a.bin", Self.attachment)
        try #require(tool(home, ["keepassxc-cli", "attachment-import", db, "Mail/Box", "a.bin", bin], stdin: "dbpw\n").status == 0)
        let header = try #require(FileManager.default.contents(atPath: db))
        #expect(Array(header[8..<12]) == [1, 0, 4, 0], "KDBX 4.1")
        let r = importWithoutKeePassXC(home, db, prefix: "m")
        #expect(r.status == 0, "\(r)")
        #expect(get(home, "m/Mail/Box", "username") == "bob")
        #expect(get(home, "m/Mail/Box", "password") == "box-pässword")
        let out = home.path("a.out")
        #expect(home.unlocked(["get", "m/Mail/Box", "--field", "a.bin", "--out", out]).status == 0)
        #expect(FileManager.default.contents(atPath: out) == Self.attachment)
    }

    @Test(.timeLimit(.minutes(3))) func cofferExportOpensInKeePassXCAndPykeepass() throws {
        let home = TestHome()
        home.initVault()
        func ok(_ args: [String], stdin: String? = nil) throws {
            let r = home.unlocked(args, stdin: stdin)
            try #require(r.status == 0, "\(args): \(r)")
        }
        try ok(
            [
                "add", "Work/AWS", "--type", "login", "--field", "username=admin", "--field", "url=https://aws.example", "--field",
                "region=eu-west-1", "--field", "notes=line 1", "--tag", "ops", "--tag", "prod", "--expires", "2031-03-04",
            ], stdin: "first")
        try ok(["edit", "Work/AWS", "--secret", "password"], stdin: "second")
        try ok(["edit", "Work/AWS", "--secret", "password"], stdin: "aws-pässword")
        try ok(["edit", "Work/AWS", "--secret", "recovery"], stdin: "rc-1")
        try ok(["edit", "Work/AWS", "--field", "totp=otpauth://totp/AWS:admin?secret=JBSWY3DPEHPK3PXP"])
        let bin = file(home, "id.bin", Self.attachment)
        try ok(["attach", "Work/AWS", bin])
        try ok(["add", "api/stripe", "--type", "api-key"], stdin: "sk_test_51HxExampleKeyValue0000000000")
        let pw = file(home, "target", Data("dbpw\n".utf8))
        let db = home.path("coffer.kdbx")
        try ok(["export", "--format", "kdbx", "--out", db, "--target-passphrase-file", pw])

        let show = tool(home, ["keepassxc-cli", "show", "-s", db, "Work/AWS"], stdin: "dbpw\n")
        #expect(show.status == 0, "\(show)")
        #expect(show.stdout.contains("UserName: admin") && show.stdout.contains("Password: aws-pässword"), "\(show)")
        #expect(show.stdout.contains("URL: https://aws.example") && show.stdout.contains("Notes: line 1"), "\(show)")
        for (attr, value) in [("region", "eu-west-1"), ("recovery", "rc-1"), ("otp", "otpauth://totp/AWS:admin?secret=JBSWY3DPEHPK3PXP")] {
            let r = tool(home, ["keepassxc-cli", "show", "-q", "-s", "-a", attr, db, "Work/AWS"], stdin: "dbpw\n")
            #expect(r.out == value, "\(attr): \(r)")
        }
        let api = tool(home, ["keepassxc-cli", "show", "-q", "-s", "-a", "Password", db, "api/stripe"], stdin: "dbpw\n")
        #expect(api.out == "sk_test_51HxExampleKeyValue0000000000", "\(api)")
        let out = home.path("kx.bin")
        let exp = tool(home, ["keepassxc-cli", "attachment-export", db, "Work/AWS", "id.bin", out], stdin: "dbpw\n")
        #expect(exp.status == 0, "\(exp)")
        #expect(FileManager.default.contents(atPath: out) == Self.attachment)

        let read = """
            import sys, hashlib
            from pykeepass import PyKeePass
            kp = PyKeePass(sys.argv[1], password='dbpw')
            e = kp.find_entries(title='AWS', first=True)
            print('user', e.username)
            print('password', e.password)
            print('tags', ','.join(e.tags or []))
            print('expires', e.expires, e.expiry_time.date().isoformat())
            print('history', ','.join(h.password for h in e.history))
            print('recovery', e.get_custom_property('recovery'))
            print('attachment', e.attachments[0].filename, e.attachments[0].data == open(sys.argv[2], 'rb').read())
            s = kp.find_entries(title='stripe', first=True)
            print('stripe', s.password, s.get_custom_property('CofferType'))
            """
        let py = tool(home, [Self.python, "-c", read, db, bin])
        #expect(py.status == 0, "\(py)")
        let lines = Set(py.stdout.split(separator: "\n").map(String.init))
        for want in [
            "user admin", "password aws-pässword", "tags ops,prod", "expires True 2031-03-04", "recovery rc-1", "attachment id.bin True",
            "stripe sk_test_51HxExampleKeyValue0000000000 api-key",
        ] {
            #expect(lines.contains(want), "\(want): \(py)")
        }
        // One history entry per earlier write, oldest first.
        #expect(lines.contains { $0.hasPrefix("history first,second,") }, "\(py)")
    }
}
