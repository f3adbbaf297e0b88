import CofferTestSupport
import Foundation
import Testing

/// Attachments checked against the real programs: Coffer's keepass-xml
/// export imported by `keepassxc-cli import`, each attachment saved back
/// with `keepassxc-cli attachment-export` (bytes equal) and the database
/// exported by KeePassXC imported back into Coffer (bytes equal); a binary file
/// encrypted into a pass store by `gpg` imported as an attachment.
/// Run by `make test-interop` (COFFER_INTEROP=1).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct AttachmentsInteropTests {
    static let binary: [UInt8] = Array(0...255) + [0xFF, 0xFE, 0xC3, 0x28, 0x00]

    @discardableResult
    func tool(_ home: TestHome, _ args: [String], stdin: String? = nil, env extra: [String: String] = [:]) -> CLIResult {
        var env = home.environment
        env["QT_QPA_PLATFORM"] = "offscreen"
        for (k, v) in extra { env[k] = v }
        return Spawn.run("/usr/bin/env", args, stdin: stdin, fd3: nil, environment: env, workDir: home.root.path)
    }

    func file(_ home: TestHome, _ name: String, _ bytes: [UInt8]) -> String {
        let p = home.path(name)
        FileManager.default.createFile(atPath: p, contents: Data(bytes))
        return p
    }

    @Test func keepassXMLExportAttachmentsReadByKeePassXC() throws {
        let home = TestHome()
        home.initVault()
        let random = (0..<70_000).map { _ in UInt8.random(in: 0...255) }
        #expect(home.unlocked(["add", "Work/Cloud ☁/AWS", "--type", "login", "--field", "username=me"], stdin: "pw").status == 0)
        #expect(home.unlocked(["attach", "Work/Cloud ☁/AWS", file(home, "id.bin", Self.binary)]).status == 0)
        #expect(home.unlocked(["attach", "Work/Cloud ☁/AWS", file(home, "big.dat", random), "--as", "ключ.dat"]).status == 0)
        #expect(home.unlocked(["add", "copy", "--type", "note"], stdin: "same file elsewhere").status == 0)
        #expect(home.unlocked(["attach", "copy", file(home, "id2.bin", Self.binary), "--as", "id.bin"]).status == 0)
        #expect(home.unlocked(["attach", "copy", file(home, "empty", [])]).status == 0)
        let xml = home.path("coffer.xml")
        let ex = home.unlocked(["export", "--format", "keepass-xml", "--plaintext", "--out", xml])
        try #require(ex.status == 0, "\(ex)")
        let db = home.path("from-coffer.kdbx")
        let imp = tool(home, ["keepassxc-cli", "import", "-p", "-t", "100", xml, db], stdin: "pw\npw\n")
        try #require(imp.status == 0, "\(imp)")
        func exported(_ entry: String, _ name: String) -> [UInt8]? {
            let out = home.path("back-\(UUID().uuidString.prefix(8))")
            let r = tool(home, ["keepassxc-cli", "attachment-export", db, entry, name, out], stdin: "pw\n")
            guard r.status == 0, let d = FileManager.default.contents(atPath: out) else { return nil }
            return [UInt8](d)
        }
        #expect(exported("Work/Cloud ☁/AWS", "id.bin") == Self.binary)
        #expect(exported("Work/Cloud ☁/AWS", "ключ.dat") == random)
        #expect(exported("copy", "id.bin") == Self.binary)
        #expect(exported("copy", "empty") == [])
        let shown = tool(home, ["keepassxc-cli", "show", "-q", "-s", "-a", "Password", db, "Work/Cloud ☁/AWS"], stdin: "pw\n")
        #expect(shown.out == "pw", "\(shown)")
        // And back: KeePassXC's own XML export of that database imports
        // into Coffer with the same bytes.
        let back = tool(home, ["keepassxc-cli", "export", "--format", "xml", db], stdin: "pw\n")
        try #require(back.status == 0, "\(back)")
        let backPath = home.path("back.xml")
        FileManager.default.createFile(atPath: backPath, contents: Data(back.stdout.utf8))
        let r = home.unlocked(["import", "--from", "keepass-xml", backPath, "--prefix", "back"])
        #expect(r.status == 0, "\(r)")
        func saved(_ item: String, _ field: String) -> [UInt8]? {
            let out = home.path("saved-\(UUID().uuidString.prefix(8))")
            guard home.unlocked(["get", item, "--field", field, "--out", out]).status == 0 else { return nil }
            return FileManager.default.contents(atPath: out).map { [UInt8]($0) }
        }
        #expect(saved("back/Work/Cloud ☁/AWS", "id.bin") == Self.binary)
        #expect(saved("back/Work/Cloud ☁/AWS", "ключ.dat") == random)
        #expect(saved("back/copy", "id.bin") == Self.binary)
        #expect(saved("back/copy", "empty") == [])
    }

    @Test func binaryPassEntryBecomesAnAttachment() throws {
        let home = TestHome()
        home.initVault()
        let store = home.path("store")
        let env = try home.gpgKey(email: "attach@coffer.invalid", name: "Coffer Attachments")
        defer { tool(home, ["gpgconf", "--kill", "all"], env: env) }
        try #require(tool(home, ["pass", "init", "attach@coffer.invalid"], env: env).status == 0)
        try #require(tool(home, ["pass", "insert", "--multiline", "web/site"], stdin: "pw\nlogin: me\n", env: env).status == 0)
        // A binary file put in the store the way pass stores entries.
        try FileManager.default.createDirectory(atPath: store + "/keys", withIntermediateDirectories: true)
        let plain = file(home, "yubikey-backup.bin", Self.binary)
        let enc = tool(
            home,
            ["gpg", "--batch", "--yes", "--quiet", "--encrypt", "--recipient", "attach@coffer.invalid", "--output", store + "/keys/yubikey-backup.gpg", plain],
            env: env)
        try #require(enc.status == 0, "\(enc)")
        let r = home.unlocked(["import", "--from", "pass", "--prefix", "pass"], env: env)
        #expect(r.status == 0 && r.stderr.contains("2 added"), "\(r)")
        let out = home.path("saved.bin")
        let got = home.unlocked(["get", "pass/keys/yubikey-backup", "--field", "yubikey-backup", "--out", out])
        #expect(got.status == 0, "\(got)")
        #expect(FileManager.default.contents(atPath: out).map { [UInt8]($0) } == Self.binary)
        #expect(home.unlocked(["get", "pass/web/site", "--field", "username"]).out == "me")
        let before = home.vaultBytes()
        let again = home.unlocked(["import", "--from", "pass", "--prefix", "pass"], env: env)
        #expect(again.status == 0 && again.stderr.contains("2 identical"), "\(again)")
        #expect(home.vaultBytes() == before)
    }
}
