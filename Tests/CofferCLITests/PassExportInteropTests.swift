import CofferTestSupport
import Foundation
import Testing

/// `coffer export --format pass` checked with the real programs: a fresh
/// gpg key without passphrase in a temporary GNUPGHOME, the store read by
/// `pass show`, `pass otp` (pass-otp) and `gopass show`, and read back by `--from pass`. Run by
/// `make test-interop` (COFFER_INTEROP=1).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct PassExportInteropTests {
    /// A tool run in the test home's environment plus `extra`, killed after 60 s.
    func tool(_ home: TestHome, _ args: [String], stdin: String? = nil, env extra: [String: String]) -> TimedResult {
        var env = home.environment
        for (k, v) in extra { env[k] = v }
        return Spawn.timed("/usr/bin/env", args, environment: env, workDir: home.root.path, stdin: stdin ?? "", timeout: 60)
    }

    /// A vault with one item of each kind, and a gpg key.
    func setUp() throws -> (TestHome, [String: String]) {
        let home = TestHome()
        home.initVault()
        let env = try home.gpgKey()
        let adds: [([String], String)] = [
            (
                [
                    "add", "web/github", "--type", "login", "--field", "username=alice", "--field", "url=https://github.com", "--field",
                    "recovery code=1111-2222",
                ], "gh-pässword"
            ),
            (["add", "émoji/ключ ☕", "--type", "login"], "Ünïcode-секрет"),
            (["add", "notes/wifi", "--type", "note"], "Küche 1234\nsecond line"),
            (["add", "servers/db", "--type", "login", "--field", "username=postgres", "--field", "answer="], "db-pass"),
        ]
        for (args, stdin) in adds {
            let r = home.unlocked(args, stdin: stdin)
            try #require(r.status == 0, "\(r)")
        }
        try #require(home.unlocked(["edit", "web/github", "--totp"], stdin: "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP").status == 0)
        try #require(home.unlocked(["edit", "servers/db", "--field", "notes=primary\nreplica"]).status == 0)
        return (home, env)
    }

    @Test func passAndGopassShowEveryEntry() throws {
        let (home, env) = try setUp()
        defer { _ = tool(home, ["gpgconf", "--kill", "all"], env: env) }
        let store = home.path("store")
        let r = home.unlocked(["export", "--format", "pass", "--out", store, "--gpg-id", "interop@coffer.invalid"], env: env)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("wrote 4 entries to the password store"), "\(r)")
        #expect((try? String(contentsOfFile: store + "/.gpg-id", encoding: .utf8)) == "interop@coffer.invalid\n")
        // No plaintext file anywhere in the store: every file is gpg output or .gpg-id.
        let files = FileManager.default.enumerator(atPath: store)?.compactMap { $0 as? String } ?? []
        for f in files where !f.hasSuffix(".gpg") && f != ".gpg-id" {
            var isDir: ObjCBool = false
            FileManager.default.fileExists(atPath: store + "/" + f, isDirectory: &isDir)
            #expect(isDir.boolValue, "unexpected file \(f)")
        }
        for f in files where f.hasSuffix(".gpg") {
            let data = FileManager.default.contents(atPath: store + "/" + f) ?? Data()
            #expect(!String(decoding: data, as: UTF8.self).contains("pass"), "\(f) holds plaintext?")
            let mode = (try? FileManager.default.attributesOfItem(atPath: store + "/" + f)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o600, "\(f) mode \(String(mode, radix: 8))")
        }
        let expected: [(String, String)] = [
            (
                "web/github",
                "gh-pässword\nusername: alice\nurl: https://github.com\nrecovery code: 1111-2222\notpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP\n"
            ),
            ("émoji/ключ ☕", "Ünïcode-секрет\n"),
            ("notes/wifi", "\nKüche 1234\nsecond line\n"),
            ("servers/db", "db-pass\nusername: postgres\nanswer: \nprimary\nreplica\n"),
        ]
        for (name, text) in expected {
            let shown = tool(home, ["pass", "show", name], env: env)
            #expect(shown.status == 0 && shown.text == text, "pass show \(name): \(shown)")
            let gopass = tool(home, ["gopass", "show", name], env: env)
            // gopass prints an empty password line not at all (the note).
            #expect(gopass.status == 0 && gopass.text == (text.hasPrefix("\n") ? String(text.dropFirst()) : text), "gopass show \(name): \(gopass)")
        }
        // pass-otp reads the otpauth:// line: the same code as `coffer otp`.
        var compared = false
        for _ in 0..<3 where !compared {
            let before = Int64(Date().timeIntervalSince1970)
            let otp = tool(home, ["pass", "otp", "web/github"], env: env)
            let after = Int64(Date().timeIntervalSince1970)
            guard before / 30 == after / 30 else {
                Thread.sleep(forTimeInterval: 3)
                continue
            }
            let ours = home.unlocked(["otp", "web/github", "--at", String(before)])
            #expect(otp.status == 0 && otp.text == ours.out + "\n", "pass otp: \(otp)\ncoffer: \(ours)")
            compared = true
        }
        #expect(compared)
    }

    @Test func roundTripThroughPassGivesTheSameItems() throws {
        let (home, env) = try setUp()
        defer { _ = tool(home, ["gpgconf", "--kill", "all"], env: env) }
        let store = home.path("store")
        let r = home.unlocked(["export", "--format", "pass", "--out", store, "--gpg-id", "interop@coffer.invalid"], env: env)
        try #require(r.status == 0, "\(r)")
        let other = TestHome()
        other.initVault()
        let back = other.unlocked(["import", "--from", "pass", store], env: env)
        #expect(back.status == 0 && back.stderr.contains("4 added"), "\(back)")
        for name in ["web/github", "émoji/ключ ☕", "notes/wifi", "servers/db"] {
            let a = home.unlocked(["show", name, "--json", "--reveal"]).stdout
            let b = other.unlocked(["show", name, "--json", "--reveal"]).stdout
            #expect(Self.fields(a) == Self.fields(b) && !Self.fields(a).isEmpty, "\(name)\n\(a)\n\(b)")
        }
    }

    /// (name, value) of every field in `coffer show --json` output.
    static func fields(_ json: String) -> [String: String] {
        guard let o = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], let fs = o["fields"] as? [[String: Any]] else { return [:] }
        var out: [String: String] = [:]
        for f in fs { if let n = f["name"] as? String { out[n] = f["value"] as? String ?? "" } }
        return out
    }

    @Test func existingStoreUnknownRecipientAndTakenEntries() throws {
        let (home, env) = try setUp()
        defer { _ = tool(home, ["gpgconf", "--kill", "all"], env: env) }
        let store = home.path("store")
        // An existing store made by pass: its .gpg-id says the recipients.
        #expect(tool(home, ["pass", "init", "interop@coffer.invalid"], env: env).status == 0)
        #expect(tool(home, ["pass", "insert", "--multiline", "mine"], stdin: "kept\n", env: env).status == 0)
        let r = home.unlocked(["export", "--format", "pass", "--out", store], env: env)
        #expect(r.status == 0, "\(r)")
        #expect(tool(home, ["pass", "show", "mine"], env: env).text == "kept\n")
        #expect(tool(home, ["pass", "show", "servers/db"], env: env).text.hasPrefix("db-pass\n"))
        let again = home.unlocked(["export", "--format", "pass", "--out", store], env: env)
        #expect(again.status == 73 && again.stderr.contains("already holds 4 of these entries"), "\(again)")
        // A recipient gpg has no key for: gpg's failure named, nothing written.
        let fresh = home.path("fresh")
        let bad = home.unlocked(["export", "--format", "pass", "--out", fresh, "--gpg-id", "nobody@coffer.invalid"], env: env)
        #expect(bad.status == 66, "\(bad)")
        #expect(bad.stderr.hasPrefix("coffer: error: gpg cannot encrypt to nobody@coffer.invalid: nobody@coffer.invalid: skipped: "), "\(bad)")
        #expect(!FileManager.default.fileExists(atPath: fresh))
    }
}
