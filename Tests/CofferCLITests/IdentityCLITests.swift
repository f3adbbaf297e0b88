import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer identity new` and `coffer identity show` (docs/sharing.md,
/// "Identities").
@Suite("coffer identity")
struct IdentityCLITests {
    static func home() -> TestHome {
        let home = TestHome()
        home.initVault()
        return home
    }

    static func isPublicIdentity(_ s: String) -> Bool {
        s.count == 117 && s.hasPrefix("coffer1") && s.dropFirst(7).allSatisfy { "qpzry9x8gf2tvdw0s3jn54khce6mua7l".contains($0) }
    }

    @Test("identity new keeps the secret half in the vault, local-only and hidden, and prints the public half")
    func newInVault() {
        let home = Self.home()
        let r = home.unlocked(["identity", "new", "--name", "alice"])
        #expect(r.status == 0, "\(r)")
        #expect(Self.isPublicIdentity(r.out), "\(r)")
        #expect(r.stderr.contains("made the identity 'alice'"), "\(r)")
        let shown = home.unlocked(["identity", "show"])
        #expect(shown.out == r.out, "\(shown)")
        let json = home.unlocked(["identity", "show", "--json"])
        SchemaValidation.expectValid(json.stdout, schema: "identity.schema.json")
        #expect(json.stdout.contains("\"publicIdentity\" : \"\(r.out)\""), "\(json)")
        #expect(!json.stdout.contains("coffer-secret1"))
        // Hidden from listings; never in a bundle (local-only).
        #expect(!home.unlocked(["ls"]).stdout.contains(".coffer/identity"))
        let bundle = home.path("b.cb")
        #expect(home.unlocked(["export", "--out", bundle]).status == 0)
        let clone = home.path("clone.coffer")
        let c = home.unlocked(["clone", bundle, "--vault", clone])
        #expect(c.status == 0, "\(c)")
        let none = home.unlocked(["identity", "show", "--vault", clone])
        #expect(none.status == 66, "\(none)")
        #expect(none.stderr.contains("this vault holds no member identity"), "\(none)")
    }

    @Test("a second identity in the same vault is refused (73), the first stays")
    func secondIdentityRefused() {
        let home = Self.home()
        let first = home.unlocked(["identity", "new", "--name", "alice"]).out
        let before = home.vaultBytes()
        let r = home.unlocked(["identity", "new", "--name", "bob"])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.contains("already holds the identity 'alice'"), "\(r)")
        #expect(r.stderr.contains("coffer: hint: "), "\(r)")
        #expect(home.vaultBytes() == before)
        #expect(home.unlocked(["identity", "show"]).out == first)
    }

    @Test("identity new --out writes a 0600 file without a vault; show --identity reads it back")
    func newInFile() throws {
        let home = TestHome() // no vault at all
        let file = home.path("ci.identity")
        let r = home.run(["identity", "new", "--name", "ci-deploy", "--out", file])
        #expect(r.status == 0, "\(r)")
        #expect(Self.isPublicIdentity(r.out), "\(r)")
        var st = stat()
        #expect(stat(file, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.contains("# name: ci-deploy\n"))
        #expect(text.contains("# public: \(r.out)\n"))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("coffer-secret1") }.count == 1)
        #expect(!r.stdout.contains("coffer-secret1") && !r.stderr.contains("coffer-secret1"))
        let shown = home.run(["identity", "show", "--identity", file, "--json"])
        #expect(shown.status == 0, "\(shown)")
        SchemaValidation.expectValid(shown.stdout, schema: "identity.schema.json")
        #expect(shown.stdout.contains("\"name\" : \"ci-deploy\""), "\(shown)")
        #expect(shown.stdout.contains(r.out))
        // Never overwritten.
        let again = home.run(["identity", "new", "--out", file])
        #expect(again.status == 73, "\(again)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == text)
    }

    @Test("bad names and bad identity files: one clear error, the documented exit code, nothing written")
    func badInput() throws {
        let home = Self.home()
        let before = home.vaultBytes()
        for name in ["a b", "-x", "é", String(repeating: "a", count: 65), "a/b"] {
            let r = home.unlocked(["identity", "new", "--name=\(name)"])
            #expect(r.status == 64, "\(name): \(r)")
            #expect(r.stderr.contains("coffer: error: invalid member name"), "\(r)")
            #expect(r.stderr.contains("coffer: hint: "), "\(r)")
        }
        #expect(home.vaultBytes() == before)
        let good = home.path("good.identity")
        #expect(home.run(["identity", "new", "--out", good]).status == 0)
        let goodText = try String(contentsOfFile: good, encoding: .utf8)
        let secretLine = goodText.split(separator: "\n").first { $0.hasPrefix("coffer-secret1") }.map(String.init) ?? ""
        let publicLine = goodText.split(separator: "\n").first { $0.hasPrefix("# public: ") }.map { String($0.dropFirst(10)) } ?? ""
        var mistyped = Array(secretLine)
        mistyped[30] = mistyped[30] == "q" ? "p" : "q"
        let cases: [(content: String?, status: Int32, says: String)] = [
            (nil, 66, "no identity file at"),
            ("", 65, "holds no identity"),
            ("# only a comment\n", 65, "holds no identity"),
            (secretLine + "\n" + secretLine + "\n", 65, "more than one identity (line 2)"),
            (String(mistyped) + "\n", 65, "checksum does not match"),
            (publicLine + "\n", 65, "this is a public identity"),
            ("hello world\n", 65, "not a valid identity file"),
        ]
        for (i, c) in cases.enumerated() {
            let file = home.path("bad\(i).identity")
            if let content = c.content { try content.write(toFile: file, atomically: true, encoding: .utf8) }
            let r = home.run(["identity", "show", "--identity", file])
            #expect(r.status == c.status, "\(c.says): \(r)")
            #expect(r.stderr.hasPrefix("coffer: error: "), "\(r)")
            #expect(r.stderr.contains(c.says), "\(r)")
            #expect(!r.stderr.contains(secretLine.dropFirst(20).prefix(40)), "a secret in an error: \(r)")
        }
        let notUTF8 = home.path("binary.identity")
        try Data([0xff, 0xfe, 0x00, 0x41]).write(to: URL(fileURLWithPath: notUTF8))
        let r = home.run(["identity", "show", "--identity", notUTF8])
        #expect(r.status == 65, "\(r)")
        #expect(r.stderr.contains("not UTF-8"), "\(r)")
    }
}
