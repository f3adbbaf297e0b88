import CofferTestSupport
import Foundation
import Testing

/// `coffer import --from kdbx` on bad input, and `coffer export --format
/// kdbx` usage, through the real binary: one `coffer: error:` line and a
/// hint, the documented exit code, the vault's bytes unchanged, no signal.
/// No other program runs (PATH is an empty folder).
@Suite struct KDBXCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/kdbx")

    func fixture(_ name: String) throws -> Data { try Data(contentsOf: Self.fixtures.appendingPathComponent(name)) }

    func write(_ home: TestHome, _ name: String, _ data: Data) -> String {
        let p = home.path(name)
        FileManager.default.createFile(atPath: p, contents: data)
        return p
    }

    /// Imports `db` with `password`, PATH holding no program at all.
    func importKDBX(_ home: TestHome, _ db: String, password: String, keyFile: String? = nil, keyOption: String = "--source-key-file") -> CLIResult {
        let empty = home.path("empty-path")
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let pw = write(home, "pw-\(UUID().uuidString)", Data((password + "\n").utf8))
        var args = ["import", "--from", "kdbx", db, "--source-passphrase-file", pw]
        if let keyFile { args += [keyOption, keyFile] }
        return home.unlocked(args, env: ["PATH": empty])
    }

    func expectRefused(_ home: TestHome, _ r: CLIResult, _ code: Int32, _ words: String, before: Data, _ what: String) {
        #expect(r.status == code, "\(what): \(r)")
        #expect(r.stderr.contains("coffer: error:") && r.stderr.contains(words), "\(what): \(r)")
        #expect(r.stderr.contains("coffer: hint:"), "\(what): \(r)")
        #expect(home.vaultBytes() == before, "\(what): the vault changed")
    }

    @Test func readsWithoutKeePassXCOnPath() throws {
        let home = TestHome()
        home.initVault()
        let db = write(home, "f.kdbx", try fixture("Format400.kdbx"))
        let r = importKDBX(home, db, password: "t")
        #expect(r.status == 0, "\(r)")
        #expect(home.unlocked(["get", "Format400", "--field", "username"]).out == "Format400")
        let key = write(home, "k.key", try fixture("KeyFileProtected.key"))
        let kf = importKDBX(home, write(home, "kf.kdbx", try fixture("KeyFileProtected.kdbx")), password: "a", keyFile: key)
        #expect(kf.status == 0 && kf.stderr.contains("2 added"), "\(kf)")
        // keepassxc-cli's spelling of the option, into a fresh vault.
        let other = TestHome()
        other.initVault()
        let otherKey = write(other, "k.key", try fixture("KeyFileProtected.key"))
        let spelled = importKDBX(
            other, write(other, "kf.kdbx", try fixture("KeyFileProtected.kdbx")), password: "a", keyFile: otherKey, keyOption: "--key-file")
        #expect(spelled.status == 0 && spelled.stderr.contains("2 added"), "\(spelled)")
    }

    @Test func badDatabasesLeaveTheVaultAlone() throws {
        let home = TestHome()
        home.initVault()
        let before = home.vaultBytes()
        let full = try fixture("Format400.kdbx")

        let wrong = importKDBX(home, write(home, "a.kdbx", full), password: "not it")
        expectRefused(home, wrong, 77, "does not open", before: before, "wrong password")

        let key = write(home, "other.key", try fixture("FileKeyBinary.key"))
        let wrongKey = importKDBX(home, write(home, "kp.kdbx", try fixture("KeyFileProtected.kdbx")), password: "a", keyFile: key)
        expectRefused(home, wrongKey, 77, "key file do not open", before: before, "wrong key file")

        for cut in [10, 150, full.count / 2, full.count - 20] {
            let r = importKDBX(home, write(home, "cut\(cut).kdbx", full.prefix(cut)), password: "t")
            expectRefused(home, r, 65, "cut", before: before, "truncated at \(cut)")
        }
        var flipped = full
        flipped[full.count - 80] ^= 0x10
        let flip = importKDBX(home, write(home, "flip.kdbx", flipped), password: "t")
        expectRefused(home, flip, 65, "HMAC", before: before, "bit flip in a block")
        var header = full
        header[30] ^= 0x01
        let h = importKDBX(home, write(home, "header.kdbx", header), password: "t")
        #expect(h.status == 65 || h.status == 77, "\(h)")
        #expect(home.vaultBytes() == before)

        let tf = importKDBX(home, write(home, "tf.kdbx", try fixture("pykeepass-test4_twofish.kdbx")), password: "password")
        expectRefused(home, tf, 65, "Twofish", before: before, "Twofish")

        let notDB = importKDBX(home, write(home, "x.kdbx", Data("hello".utf8)), password: "t")
        expectRefused(home, notDB, 65, "not a KeePass database", before: before, "not a database")
    }

    @Test func exportUsage() throws {
        let home = TestHome()
        home.initVault()
        let plain = home.unlocked(["export", "--format", "kdbx", "--plaintext", "--out", home.path("x.kdbx")])
        #expect(plain.status == 64 && plain.stderr.contains("drop --plaintext"), "\(plain)")
        // No terminal, no --target-passphrase-*: refused before anything is read.
        let noPW = home.unlocked(["export", "--format", "kdbx", "--out", home.path("x.kdbx")])
        #expect(noPW.status == 64 && noPW.stderr.contains("--target-passphrase-fd"), "\(noPW)")
        let misplaced = home.unlocked(["export", "--out", home.path("b"), "--target-passphrase-file", "f"])
        #expect(misplaced.status == 64, "\(misplaced)")
        #expect(!FileManager.default.fileExists(atPath: home.path("x.kdbx")))
    }

    @Test func exportIsPrivateAndReadsBack() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "web/site", "--type", "login", "--field", "username=bob"], stdin: "s3cret").status == 0)
        let pw = write(home, "target", Data("db pass\n".utf8))
        let out = home.path("out.kdbx")
        let r = home.unlocked(["export", "--format", "kdbx", "--out", out, "--target-passphrase-file", pw])
        #expect(r.status == 0, "\(r)")
        let mode = (try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        let back = home.unlocked(["import", "--from", "kdbx", out, "--prefix", "back", "--source-passphrase-file", pw])
        #expect(back.status == 0, "\(back)")
        #expect(home.unlocked(["get", "back/web/site", "--field", "password"]).out == "s3cret")
        #expect(home.unlocked(["get", "back/web/site", "--field", "username"]).out == "bob")
    }
}
