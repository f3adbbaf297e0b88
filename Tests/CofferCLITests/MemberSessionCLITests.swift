import CofferCrypto
import CofferSync
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Key rotations met by a member replica through a shell session or an
/// import (docs/sharing.md, "Key rotations"; docs/sessions.md, "Member
/// identities"): the identity adopts the new key, never the passphrase,
/// and the session goes on under the new key.
@Suite("member replicas: key rotations through sessions and imports")
struct MemberSessionCLITests {
    typealias World = MemberReplicaCLITests.World

    static func errorLines(_ r: CLIResult) -> Int { MemberReplicaCLITests.errorLines(r) }

    /// A session of bob's replica opened with his identity file.
    static func identitySession(_ w: World, _ m: String = "bob", vault: String? = nil) throws -> String {
        let u = w.member(["unlock", "--shell", "sh"], m, vault: vault)
        #expect(u.status == 0, "\(u)")
        return try SessionTests.token(fromShellLine: u.out)
    }

    /// `coffer ARGS --vault VAULT` with only the session (no passphrase,
    /// no identity file, no terminal).
    static func viaSession(_ w: World, _ args: [String], token: String, vault: String, stdin: String? = nil) -> CLIResult {
        w.home.run(args + ["--vault", vault], stdin: stdin, env: ["COFFER_SESSION": token])
    }

    /// Alice removes carol, writes k2 = sk-2 under the new key, and syncs.
    static func rotate(_ w: World) {
        let rm = w.home.unlocked(["members", "rm", "carol"])
        precondition(rm.status == 0, "\(rm)")
        precondition(w.home.unlocked(["add", "k2"], stdin: "sk-2\n").status == 0)
        precondition(w.home.unlocked(["sync", w.sync]).status == 0)
    }

    @Test("a session opened with an identity signs what it syncs, adopts a rotation through the identity, and goes on under the new key")
    func identitySessionAdopts() throws {
        let w = World(members: ["bob", "carol"])
        #expect(w.member(["clone", w.sync]).status == 0)
        let token = try Self.identitySession(w)
        // The identity kept beside the session is a private file that does
        // not hold the secret in the clear.
        let sidecar = SessionTests.sessionFile(w.home, token: token).replacingOccurrences(of: ".session", with: ".identity")
        var st = stat()
        #expect(stat(sidecar, &st) == 0 && st.st_mode & 0o777 == 0o600, "the session's identity file is 0600")
        let secretLine = try String(contentsOfFile: w.id("bob"), encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("coffer-secret1") }
        let sidecarText = String(decoding: try Data(contentsOf: URL(fileURLWithPath: sidecar)), as: UTF8.self)
        #expect(secretLine != nil && !sidecarText.contains(String(secretLine ?? "x")) && !sidecarText.contains("coffer-secret1"))
        // Its writes are signed: alice takes them.
        #expect(Self.viaSession(w, ["add", "from-bob"], token: token, vault: w.bVault, stdin: "sk-b\n").status == 0)
        let s = Self.viaSession(w, ["sync", w.sync], token: token, vault: w.bVault)
        #expect(s.status == 0, "\(s)")
        let a = w.home.unlocked(["sync", w.sync])
        #expect(a.status == 0 && !a.stderr.contains("unsigned"), "\(a)")
        #expect(w.home.unlocked(["get", "from-bob"]).out == "sk-b")
        // Alice's rotation ends every session of the vault in this home;
        // bob opens a new one with his identity.
        Self.rotate(w)
        let fresh = try Self.identitySession(w)
        let adopt = Self.viaSession(w, ["sync", w.sync], token: fresh, vault: w.bVault)
        #expect(adopt.status == 0, "\(adopt)")
        #expect(adopt.stderr.contains("adopted the new master key"), "\(adopt)")
        #expect(adopt.stderr.contains("this shell's session goes on under the new key"), "\(adopt)")
        #expect(!adopt.stderr.contains("Passphrase") && !adopt.stderr.contains("passphrase is needed"), "\(adopt)")
        // What the adopting sync published is signed under the new key: alice takes it.
        let taken = w.home.unlocked(["sync", w.sync])
        #expect(taken.status == 0 && !taken.stderr.contains("warning"), "\(taken)")
        // The same session reads the new key's items, writes, and signs.
        #expect(Self.viaSession(w, ["get", "k2"], token: fresh, vault: w.bVault).out == "sk-2")
        #expect(Self.viaSession(w, ["add", "after"], token: fresh, vault: w.bVault, stdin: "sk-after\n").status == 0)
        #expect(Self.viaSession(w, ["sync", w.sync], token: fresh, vault: w.bVault).status == 0)
        #expect(w.home.unlocked(["sync", w.sync]).status == 0)
        #expect(w.home.unlocked(["get", "after"]).out == "sk-after")
        #expect(w.member(["verify"]).status == 0)
    }

    @Test("a removed member's identity session: one line, exit 77, the vault and the session unchanged")
    func removedIdentitySession() throws {
        let w = World(members: ["bob", "carol"])
        let carolVault = w.home.path("c.coffer")
        #expect(w.member(["clone", w.sync], "carol", vault: carolVault).status == 0)
        Self.rotate(w)
        let token = try Self.identitySession(w, "carol", vault: carolVault)
        let before = w.home.vaultBytes(carolVault)
        for args in [["sync", w.sync]] {
            let r = Self.viaSession(w, args, token: token, vault: carolVault)
            #expect(r.status == 77, "\(r)")
            #expect(r.stderr.contains("coffer: error: you were removed from this vault"), "\(r)")
            #expect(Self.errorLines(r) == 1 && r.stderr.contains("coffer: hint:"), "\(r)")
        }
        #expect(w.home.vaultBytes(carolVault) == before)
        #expect(Self.viaSession(w, ["get", "k"], token: token, vault: carolVault).out == "sk-1")
    }

    @Test("a session opened with the passphrase on a replica that keeps its own identity adopts through it, without the passphrase")
    func passphraseSessionWithVaultIdentity() throws {
        let w = World(members: ["bob", "carol"])
        let dave = w.home.path("d.coffer")
        let c = w.home.unlocked(["clone", w.sync, "--vault", dave])
        #expect(c.status == 0, "\(c)")
        let made = w.home.unlocked(["identity", "new", "--name", "dave", "--vault", dave])
        #expect(made.status == 0, "\(made)")
        #expect(w.home.unlocked(["members", "add", "dave", made.out]).status == 0)
        #expect(w.home.unlocked(["sync", w.sync]).status == 0)
        Self.rotate(w)
        let u = w.home.unlocked(["unlock", "--shell", "sh", "--vault", dave])
        let token = try SessionTests.token(fromShellLine: u.out)
        let r = Self.viaSession(w, ["sync", w.sync], token: token, vault: dave)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("adopted the new master key") && r.stderr.contains("session goes on under the new key"), "\(r)")
        #expect(Self.viaSession(w, ["get", "k2"], token: token, vault: dave).out == "sk-2")
    }

    /// The newest bundle alice wrote after the rotation, exported to a file.
    static func newerBundle(_ w: World) -> String {
        let out = w.home.path("rotated.coffer-bundle")
        let e = w.home.unlocked(["export", "--out", out])
        precondition(e.status == 0, "\(e)")
        return out
    }

    @Test("import of a newer-epoch bundle adopts through --identity, $COFFER_IDENTITY_FILE, an identity session or the vault's identity")
    func importAdoptsThroughIdentity() throws {
        let w = World(members: ["bob", "carol"])
        #expect(w.member(["clone", w.sync]).status == 0)
        let pristine = w.home.vaultBytes(w.bVault)
        Self.rotate(w)
        let bundle = Self.newerBundle(w)
        // --identity
        let r = w.member(["import", bundle])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("adopted the new master key") && r.stderr.contains("imported"), "\(r)")
        #expect(w.member(["get", "k2"]).out == "sk-2")
        // $COFFER_IDENTITY_FILE
        try pristine.write(to: URL(fileURLWithPath: w.bVault))
        let viaEnv = w.home.run(["import", bundle, "--vault", w.bVault], env: ["COFFER_IDENTITY_FILE": w.id("bob")])
        #expect(viaEnv.status == 0 && viaEnv.stderr.contains("adopted the new master key"), "\(viaEnv)")
        #expect(w.member(["get", "k2"]).out == "sk-2")
        // an identity session, which goes on
        try pristine.write(to: URL(fileURLWithPath: w.bVault))
        let token = try Self.identitySession(w)
        let viaSession = Self.viaSession(w, ["import", bundle], token: token, vault: w.bVault)
        #expect(viaSession.status == 0 && viaSession.stderr.contains("session goes on under the new key"), "\(viaSession)")
        #expect(Self.viaSession(w, ["get", "k2"], token: token, vault: w.bVault).out == "sk-2")
    }

    @Test("import by a removed member: one line, exit 77, the vault unchanged")
    func importByRemovedMember() throws {
        let w = World(members: ["bob", "carol"])
        let carolVault = w.home.path("c.coffer")
        #expect(w.member(["clone", w.sync], "carol", vault: carolVault).status == 0)
        Self.rotate(w)
        let bundle = Self.newerBundle(w)
        let before = w.home.vaultBytes(carolVault)
        let r = w.member(["import", bundle], "carol", vault: carolVault)
        #expect(r.status == 77, "\(r)")
        #expect(r.stderr.contains("coffer: error: you were removed from this vault: the key was rotated on "), "\(r)")
        #expect(Self.errorLines(r) == 1 && r.stderr.contains("coffer: hint:"), "\(r)")
        #expect(!r.stderr.contains("Passphrase"), "\(r)")
        #expect(w.home.vaultBytes(carolVault) == before)
    }

    /// `bundle` with the box sealed to `identityFile`'s identity replaced
    /// by one that opens with it but names another vault (rule
    /// `sealed-key-binding`): what a member could forge for another.
    static func sealedForAnotherVault(_ bundle: String, identityFile: String, to out: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: bundle)))
        var (header, prefix) = try BundleHeader.read(from: ByteArrayInput(bytes))
        let line = try String(contentsOfFile: identityFile, encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("coffer-secret1") }
        var text = Array((line.map(String.init) ?? "").utf8)
        let key = try MemberSecretKey(text: SecretBytes(consuming: &text))
        let mine = try #require(header.sealedKeys.firstIndex { (try? key.openSealed($0, prefixLength: KeyHierarchy.sealPrefixLength)) != nil })
        let other = try #require(VaultID(bytes: [UInt8](repeating: 0x22, count: 16)))
        header.sealedKeys[mine] = try key.publicKey.seal(
            SecretBytes.random(count: 32), prefix: KeyHierarchy.sealPrefix(vault: other, epoch: header.keyEpoch))
        // The header keeps its boxes in increasing byte order.
        header.sealedKeys.sort { $0.lexicographicallyPrecedes($1) }
        let forged = header.encoded + bytes[prefix.count...]
        #expect(forged.count == bytes.count)
        try Data(forged).write(to: URL(fileURLWithPath: out))
    }

    @Test("a newer-epoch bundle whose box for this identity names another vault: 65 (sealed-key-binding), one line, the vault unchanged")
    func sealedKeyForAnotherVault() throws {
        let w = World(members: ["bob", "carol"])
        #expect(w.member(["clone", w.sync]).status == 0)
        Self.rotate(w)
        let forged = w.home.path("forged.coffer-bundle")
        try Self.sealedForAnotherVault(Self.newerBundle(w), identityFile: w.id("bob"), to: forged)
        let folder = w.home.path("forged-sync")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: forged, toPath: folder + "/forged.coffer-bundle")
        let token = try Self.identitySession(w)
        let before = w.home.vaultBytes(w.bVault)
        let runs: [(String, CLIResult)] = [
            ("import --identity", w.member(["import", forged])),
            ("import via session", Self.viaSession(w, ["import", forged], token: token, vault: w.bVault)),
            ("sync --identity", w.member(["sync", folder])),
        ]
        for (what, r) in runs {
            #expect(r.status == 65, "\(what): \(r)")
            #expect(r.stderr.contains("sealed-key-binding"), "\(what): \(r)")
            #expect(Self.errorLines(r) == 1 && r.stderr.contains("coffer: hint:"), "\(what): \(r)")
            #expect(w.home.vaultBytes(w.bVault) == before, "\(what) changed the vault")
        }
        #expect(Self.viaSession(w, ["get", "k"], token: token, vault: w.bVault).out == "sk-1")
    }

    @Test(
        "bad identity files on the adoption paths (import, sync): another vault's member, open to others, truncated — one line, the documented code, the vault unchanged"
    )
    func badIdentityFilesOnAdoption() throws {
        let w = World(members: ["bob", "carol"])
        #expect(w.member(["clone", w.sync]).status == 0)
        Self.rotate(w)
        let bundle = Self.newerBundle(w)
        // A member of another vault (its own identity, added there).
        let other = TestHome()
        other.initVault()
        let eve = other.run(["identity", "new", "--name", "eve", "--out", w.home.path("eve.id")])
        #expect(eve.status == 0)
        #expect(other.unlocked(["members", "add", "eve", eve.out]).status == 0)
        let open = w.home.path("open.id")
        try FileManager.default.copyItem(atPath: w.id("bob"), toPath: open)
        chmod(open, 0o644)
        let truncated = w.home.path("truncated.id")
        let full = try String(contentsOfFile: w.id("bob"), encoding: .utf8)
        FileManager.default.createFile(atPath: truncated, contents: Data(full.prefix(full.count - 20).utf8), attributes: [.posixPermissions: 0o600])
        let before = w.home.vaultBytes(w.bVault)
        let cases: [(String, Int32, String)] = [
            (w.home.path("eve.id"), 77, "does not open with the identity 'eve'"),
            (open, 77, "chmod 600"),
            (truncated, 65, "is not a valid identity file"),
        ]
        for (file, code, phrase) in cases {
            for args in [["import", bundle], ["sync", w.sync]] {
                for viaEnv in [false, true] {
                    let r =
                        viaEnv
                        ? w.home.run(args + ["--vault", w.bVault], env: ["COFFER_IDENTITY_FILE": file])
                        : w.home.run(args + ["--vault", w.bVault, "--identity", file])
                    #expect(r.status == code, "\(args) \(file) env=\(viaEnv): \(r)")
                    #expect(r.stderr.contains(phrase), "\(args) \(file): \(r)")
                    #expect(Self.errorLines(r) == 1 && r.stderr.contains("coffer: hint:"), "\(r)")
                    #expect(!r.stderr.contains("coffer-secret1"), "\(r)")
                    #expect(w.home.vaultBytes(w.bVault) == before, "\(args) \(file) changed the vault")
                }
            }
        }
    }

    @Test("a session's identity file altered or open to others: exit 77 when the identity is needed, the vault unchanged; get still works")
    func damagedSessionIdentity() throws {
        let w = World(members: ["bob", "carol"])
        #expect(w.member(["clone", w.sync]).status == 0)
        Self.rotate(w)
        let token = try Self.identitySession(w)
        let sidecar = SessionTests.sessionFile(w.home, token: token).replacingOccurrences(of: ".session", with: ".identity")
        let pristine = try Data(contentsOf: URL(fileURLWithPath: sidecar))
        var altered = [UInt8](pristine)
        altered[altered.count - 5] ^= 0x01
        let before = w.home.vaultBytes(w.bVault)
        for (bytes, mode, phrase) in [(altered, 0o600, "its identity file was altered"), ([UInt8](pristine), 0o644, "not a private file")] {
            try Data(bytes).write(to: URL(fileURLWithPath: sidecar))
            chmod(sidecar, mode_t(mode))
            let r = Self.viaSession(w, ["sync", w.sync], token: token, vault: w.bVault)
            #expect(r.status == 77, "\(r)")
            #expect(r.stderr.contains("session invalid (") && r.stderr.contains(phrase), "\(r)")
            #expect(Self.errorLines(r) == 1, "\(r)")
            #expect(w.home.vaultBytes(w.bVault) == before)
            #expect(Self.viaSession(w, ["get", "k"], token: token, vault: w.bVault).out == "sk-1")
        }
    }
}
