import CofferTestSupport
import Foundation
import Testing

extension TestHome {
    /// A private GNUPGHOME (`gnupg/` in the sandbox, 0700) holding one new
    /// gpg key without passphrase for `email`, and the environment that
    /// points gpg and pass at it (`PASSWORD_STORE_DIR` = `store/`). For the
    /// interop suites that drive gpg, pass and gopass; the caller ends the
    /// agent with `gpgconf --kill all`.
    func gpgKey(email: String = "interop@coffer.invalid", name: String = "Coffer Interop") throws -> [String: String] {
        let gnupg = path("gnupg")
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let env = ["GNUPGHOME": gnupg, "PASSWORD_STORE_DIR": path("store")]
        let spec = """
            %no-protection
            Key-Type: EDDSA
            Key-Curve: ed25519
            Subkey-Type: ECDH
            Subkey-Curve: cv25519
            Name-Real: \(name)
            Name-Email: \(email)
            Expire-Date: 0
            %commit

            """
        var all = environment
        for (k, v) in env { all[k] = v }
        let gen = Spawn.timed("/usr/bin/env", ["gpg", "--batch", "--quiet", "--gen-key"], environment: all, workDir: root.path, stdin: spec, timeout: 60)
        try #require(gen.status == 0, "\(gen)")
        return env
    }
}
