import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer add --type ssh-key`, `coffer get --field public-key` and
/// `coffer ssh-keygen`, on the key files of Tests/CofferKitTests/Fixtures/ssh
/// (made by ssh-keygen; no OpenSSH needed here: SSHInteropTests drives it).
@Suite("coffer ssh-key items and ssh-keygen")
struct SSHKeyCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("CofferKitTests/Fixtures/ssh")

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

    static func pub(_ name: String) -> String {
        ((try? String(contentsOfFile: fixture(name + ".pub"), encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    static func home() -> TestHome {
        let home = TestHome()
        home.initVault()
        return home
    }

    @Test("an OpenSSH or PEM key file imports; its public key reads back in authorized_keys form")
    func importsEveryType() {
        let home = Self.home()
        for file in ["ed25519", "ecdsa256", "ecdsa384", "rsa2048", "rsa2048-pkcs1", "rsa2048-pkcs8", "ecdsa256-sec1", "ecdsa384-pkcs8"] {
            let r = home.unlocked(["add", "ssh/\(file)", "--type", "ssh-key", "--from-file", Self.fixture(file)])
            #expect(r.status == 0, "\(r)")
            #expect(r.stderr.contains("added ssh/\(file) (ssh-key, "), "\(r)")
            let got = home.unlocked(["get", "ssh/\(file)", "--field", "public-key"])
            let expected = Self.pub(file)
            if file.contains("-") {
                // PEM files carry no comment: the item's name is the comment.
                let keyPart = expected.split(separator: " ").prefix(2).joined(separator: " ")
                #expect(got.out == keyPart + " ssh/\(file)", "\(got)")
            } else {
                #expect(got.out == expected, "\(got)")
            }
            // The private key is the primary field, an OpenSSH key file.
            #expect(home.unlocked(["get", "ssh/\(file)"]).out.hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----"))
        }
        let ls = home.unlocked(["ls", "--json"])
        SchemaValidation.expectValid(ls.stdout, schema: "ls.schema.json")
        #expect(ls.stdout.contains("\"ssh-key\""))
        SchemaValidation.expectValid(home.unlocked(["get", "ssh/ed25519", "--json"]).stdout, schema: "item.schema.json")
    }

    @Test("a key piped on standard input imports, with --field comment=… overriding the file's")
    func importsFromStdin() throws {
        let home = Self.home()
        let key = try String(contentsOfFile: Self.fixture("ed25519"), encoding: .utf8)
        let r = home.run(["add", "ssh/piped", "--type", "ssh-key", "--field", "comment=me@desk"], stdin: key, env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(r.status == 0, "\(r)")
        let keyPart = Self.pub("ed25519").split(separator: " ").prefix(2).joined(separator: " ")
        #expect(home.unlocked(["get", "ssh/piped", "--field", "public-key"]).out == keyPart + " me@desk")
        #expect(home.unlocked(["get", "ssh/piped", "--field", "comment"]).out == "me@desk")
    }

    @Test("bad key files: one clear error, the documented exit code, the vault unchanged")
    func badInput() throws {
        let home = Self.home()
        _ = home.unlocked(["add", "ssh/taken", "--type", "ssh-key", "--from-file", Self.fixture("ed25519")])
        let garbage = home.path("garbage")
        try "not a key\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let empty = home.path("empty")
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        let before = home.vaultBytes()
        let cases: [(args: [String], status: Int32, says: String)] = [
            (["--from-file", home.path("missing")], 66, "no key file at"),
            (["--from-file", garbage], 65, "not a readable SSH private key"),
            (["--from-file", empty], 65, "not a readable SSH private key"),
            (["--from-file", Self.fixture("ed25519.pub")], 65, "this is a public key"),
            (["--from-file", Self.fixture("rsa1024")], 65, "too small"),
            (["--from-file", Self.fixture("ecdsa521")], 65, "unsupported SSH key"),
            (["--from-file", home.root.path], 64, "not a regular file"),
            (["--from-file", Self.fixture("ed25519"), "--field", "public-key=x"], 64, "cannot be set by hand"),
            (["--from-file", Self.fixture("ed25519"), "--generate"], 64, "do not apply to ssh-key items"),
        ]
        for c in cases {
            let r = home.unlocked(["add", "ssh/new", "--type", "ssh-key"] + c.args)
            #expect(r.status == c.status, "\(c.args): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: ") && r.stderr.contains(c.says), "\(c.args): \(r)")
            #expect(r.stderr.contains("coffer: hint: "), "\(c.args): \(r)")
        }
        let dup = home.unlocked(["add", "ssh/taken", "--type", "ssh-key", "--from-file", Self.fixture("ecdsa256")])
        #expect(dup.status == 73, "\(dup)")
        let other = home.unlocked(["add", "k", "--type", "api-key", "--from-file", Self.fixture("ed25519")], stdin: "v")
        #expect(other.status == 64 && other.stderr.contains("are for --type ssh-key"), "\(other)")
        #expect(home.vaultBytes() == before)
    }

    @Test("coffer ssh-keygen makes each type, prints the public key the item holds")
    func generates() {
        let home = Self.home()
        for (name, args, prefix) in [
            ("ssh/ed", [String](), "ssh-ed25519 "), ("ssh/ec", ["--type", "ecdsa"], "ecdsa-sha2-nistp256 "),
            ("ssh/ec384", ["--type", "ecdsa", "--bits", "384"], "ecdsa-sha2-nistp384 "), ("ssh/rsa", ["--type", "rsa", "--bits", "2048"], "ssh-rsa "),
        ] {
            let r = home.unlocked(["ssh-keygen", name] + args)
            #expect(r.status == 0, "\(r)")
            #expect(r.out.hasPrefix(prefix) && r.out.hasSuffix(" \(name)"), "\(r)")
            #expect(home.unlocked(["get", name, "--field", "public-key"]).out == r.out)
        }
        let c = home.unlocked(["ssh-keygen", "ssh/c", "--comment", "me@laptop", "--confirm"])
        #expect(c.out.hasSuffix(" me@laptop"))
        #expect(home.unlocked(["get", "ssh/c", "--field", "confirm"]).out == "yes")
    }

    @Test("coffer ssh-keygen refuses bad types, sizes and taken names without writing")
    func generateErrors() {
        let home = Self.home()
        _ = home.unlocked(["ssh-keygen", "ssh/taken"])
        let before = home.vaultBytes()
        for (args, status, says) in [
            (["--type", "dsa"], Int32(64), "unknown key type 'dsa'"), (["--type", "rsa", "--bits", "1024"], 64, "not an rsa size"),
            (["--type", "ecdsa", "--bits", "521"], 64, "not an ecdsa size"), (["--bits", "256", "--type", "ed25519", "--bits", "384"], 64, "does not apply"),
        ] {
            let r = home.unlocked(["ssh-keygen", "ssh/new"] + args)
            #expect(r.status == status && r.stderr.contains(says), "\(args): \(r)")
        }
        let dup = home.unlocked(["ssh-keygen", "ssh/taken"])
        #expect(dup.status == 73, "\(dup)")
        #expect(home.vaultBytes() == before)
    }

    @Test("coffer ssh-agent refuses a relative or too long socket path and a folder open to others")
    func agentArguments() throws {
        let home = Self.home()
        for bad in ["rel.sock", "/" + String(repeating: "a", count: 120)] {
            let r = home.unlocked(["ssh-agent", "--socket", bad])
            #expect(r.status == 64 && r.stderr.contains("coffer: hint: "), "\(r)")
        }
        let open = home.path("open")
        mkdir(open, 0o755)
        chmod(open, 0o755)
        let r = home.unlocked(["ssh-agent", "--socket", open + "/s.sock"])
        #expect(r.status == 73 && r.stderr.contains("is not private"), "\(r)")
    }
}
