import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer ssh-agent` with the real OpenSSH (Debian's openssh-client and
/// openssh-server) and git: listing, signing with `ssh-keygen -Y`, logging
/// in to a real sshd on a loopback port, signing git commits, keys imported
/// from ssh-keygen's files (plain and encrypted) signing as OpenSSH's own
/// agent does, and a key made on one replica signing on another after a
/// sync. Every program runs with a time limit.
@Suite(
    "SSH agent with the real OpenSSH and git",
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct SSHInteropTests {
    static let limit = 30.0

    /// A running `coffer ssh-agent`, stopped (SIGTERM) when dropped.
    final class Agent {
        let process: SpawnedProcess
        let socket: String

        /// Starts the agent of `home`'s vault, unlocked with the passphrase
        /// on fd 3, or with `env`'s session.
        init(_ home: TestHome, socket: String? = nil, args: [String] = [], env extra: [String: String] = [:], passphrase: Bool = true) throws {
            let sock = socket ?? home.path("agent/ssh.sock")
            self.socket = sock
            var env = home.environment
            for (k, v) in extra { env[k] = v }
            let p = Spawn.start(
                CofferBinary.path, ["ssh-agent", "--socket", sock] + args + (passphrase ? ["--passphrase-fd", "3"] : []),
                fd3: passphrase ? home.passphrase + "\n" : nil, environment: env, workDir: home.root.path, ownProcessGroup: true)
            process = try #require(p)
            let deadline = Date().addingTimeInterval(SSHInteropTests.limit)
            while !FileManager.default.fileExists(atPath: sock + ".pid") {
                guard Date() < deadline, kill(process.pid, 0) == 0 else {
                    throw AgentFailure("the agent did not start: \(process.stderrText ?? "")")
                }
                usleep(20_000)
            }
        }

        var log: String { process.stderrText ?? "" }

        deinit {
            process.send(SIGTERM)
            _ = process.wait(timeout: 10)
        }
    }

    struct AgentFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// Runs a program with a time limit in `home`'s environment plus `env`.
    static func run(_ home: TestHome, _ exe: String, _ args: [String], env extra: [String: String] = [:], stdin: String? = nil) -> TimedResult {
        var env = home.environment
        for (k, v) in extra { env[k] = v }
        return Spawn.timed(exe, args, environment: env, workDir: home.root.path, stdin: stdin, timeout: limit)
    }

    static func home() -> TestHome {
        let home = TestHome()
        home.initVault()
        return home
    }

    /// Writes `coffer get NAME --field public-key` to a file of its own
    /// (no private key beside it: ssh-keygen must use the agent).
    static func publicKeyFile(_ home: TestHome, _ name: String) throws -> (path: String, line: String) {
        let r = home.unlocked(["get", name, "--field", "public-key"])
        #expect(r.status == 0, "\(r)")
        let dir = home.path("pub-\(name.replacingOccurrences(of: "/", with: "-"))")
        mkdir(dir, 0o700)
        let path = dir + "/key.pub"
        try (r.out + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return (path, r.out)
    }

    /// `ssh-keygen -Y sign` of `message` through the agent at `socket`,
    /// then `ssh-keygen -Y verify` against `pub`: the verify output.
    static func signAndVerify(
        _ home: TestHome, socket: String, pub: (path: String, line: String), message: String = "signed through the agent\n", extra: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (signature: [UInt8], verified: Bool) {
        let file = home.path("message-\(UUID().uuidString)")
        try message.write(toFile: file, atomically: true, encoding: .utf8)
        let sign = run(home, "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub.path, "-n", "file"] + extra + [file], env: ["SSH_AUTH_SOCK": socket])
        guard sign.status == 0, !sign.timedOut else {
            Issue.record("ssh-keygen -Y sign: \(sign)", sourceLocation: sourceLocation)
            return ([], false)
        }
        let allowed = home.path("allowed-\(UUID().uuidString)")
        try "signer \(pub.line)\n".write(toFile: allowed, atomically: true, encoding: .utf8)
        let verify = run(home, "/usr/bin/ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "signer", "-n", "file", "-s", file + ".sig"], stdin: message)
        let armored = (try? String(contentsOfFile: file + ".sig", encoding: .utf8)) ?? ""
        let body = armored.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let ok = verify.status == 0 && (verify.text + verify.stderr).contains("Good \"file\" signature")
        if !ok { Issue.record("ssh-keygen -Y verify: \(verify)", sourceLocation: sourceLocation) }
        return (Array(Data(base64Encoded: body) ?? Data()), ok)
    }

    @Test("ssh-add -l and -L list the vault's keys; ssh-keygen -Y signs through the agent for Ed25519, ECDSA and RSA (SHA-256 and SHA-512)")
    func listAndSign() throws {
        let home = Self.home()
        for (name, args) in [
            ("ssh/ed", [String]()), ("ssh/ec", ["--type", "ecdsa"]), ("ssh/ec384", ["--type", "ecdsa", "--bits", "384"]), ("ssh/rsa", ["--type", "rsa"]),
        ] {
            #expect(home.unlocked(["ssh-keygen", name] + args).status == 0)
        }
        home.unlocked(["add", "other", "--type", "api-key"], stdin: "not a key")
        let agent = try Agent(home)
        let list = Self.run(home, "/usr/bin/ssh-add", ["-L"], env: ["SSH_AUTH_SOCK": agent.socket])
        #expect(list.status == 0, "\(list)")
        var expected: [String] = []
        for name in ["ssh/ec", "ssh/ec384", "ssh/ed", "ssh/rsa"] { expected.append(home.unlocked(["get", name, "--field", "public-key"]).out) }
        #expect(list.text.split(separator: "\n").map(String.init) == expected)
        let l = Self.run(home, "/usr/bin/ssh-add", ["-l"], env: ["SSH_AUTH_SOCK": agent.socket])
        #expect(l.text.contains("(ED25519)") && l.text.contains("(ECDSA)") && l.text.contains("(RSA)") && l.text.contains("3072"), "\(l)")
        for name in ["ssh/ed", "ssh/ec", "ssh/ec384"] {
            let pub = try Self.publicKeyFile(home, name)
            #expect(try Self.signAndVerify(home, socket: agent.socket, pub: pub).verified, "\(name)")
        }
        // ssh-keygen -Y asks for rsa-sha2-512; rsa-sha2-256 is proven by an
        // sshd that accepts only it (sshLoginAndLock).
        let rsa = try Self.publicKeyFile(home, "ssh/rsa")
        let (sig, ok) = try Self.signAndVerify(home, socket: agent.socket, pub: rsa)
        #expect(ok)
        #expect(Data(sig).range(of: Data("rsa-sha2-512".utf8)) != nil, "the signature is not rsa-sha2-512")
    }

    @Test("keys imported from ssh-keygen's files sign as OpenSSH's own ssh-agent does with the original file")
    func importedKeysSignLikeOpenSSH() throws {
        let home = Self.home()
        let fixtures = SSHKeyCLITests.fixtures
        let keys = home.path("keys")
        mkdir(keys, 0o700)
        for file in ["ed25519", "ecdsa256", "rsa2048", "rsa2048-pkcs8", "ed25519-encrypted"] {
            let src = fixtures.appendingPathComponent(file).path
            try FileManager.default.copyItem(atPath: src, toPath: keys + "/" + file)
            chmod(keys + "/" + file, 0o600)
        }
        for file in ["ed25519", "ecdsa256", "rsa2048", "rsa2048-pkcs8"] {
            #expect(home.unlocked(["add", "ssh/\(file)", "--type", "ssh-key", "--from-file", keys + "/" + file]).status == 0)
        }
        // The encrypted key: a wrong passphrase is 77 and leaves the vault
        // as it was; the right one (on a descriptor, never argv) imports it.
        let before = home.vaultBytes()
        let wrong = home.run(
            ["add", "ssh/enc", "--type", "ssh-key", "--from-file", keys + "/ed25519-encrypted", "--key-passphrase-fd", "3"], fd3: "not it\n",
            env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(wrong.status == 77 && wrong.stderr.contains("wrong passphrase for the SSH key"), "\(wrong)")
        #expect(home.vaultBytes() == before)
        let noPass = home.run(
            ["add", "ssh/enc", "--type", "ssh-key", "--from-file", keys + "/ed25519-encrypted"], env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(noPass.status == 77, "\(noPass)") // stdin is empty: the empty passphrase is wrong
        let right = home.run(
            ["add", "ssh/enc", "--type", "ssh-key", "--from-file", keys + "/ed25519-encrypted", "--key-passphrase-fd", "3"], fd3: "fixture passphrase\n",
            env: ["COFFER_PASSPHRASE": home.passphrase])
        #expect(right.status == 0, "\(right)")
        // Nothing of the decryption is left behind in the runtime folder.
        let runtime = home.environment["XDG_RUNTIME_DIR"]!
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []).filter { $0.hasPrefix("coffer-sshkey-") }.isEmpty)

        let agent = try Agent(home)
        let openssh = home.path("openssh-agent.sock")
        let theirs = try #require(
            Spawn.start("/usr/bin/ssh-agent", ["-D", "-a", openssh], environment: home.environment, workDir: home.root.path, ownProcessGroup: true))
        defer {
            theirs.send(SIGTERM)
            _ = theirs.wait(timeout: 10)
        }
        let deadline = Date().addingTimeInterval(Self.limit)
        while !FileManager.default.fileExists(atPath: openssh) && Date() < deadline { usleep(20_000) }
        for (file, item) in [
            ("ed25519", "ssh/ed25519"), ("ecdsa256", "ssh/ecdsa256"), ("rsa2048", "ssh/rsa2048"), ("rsa2048-pkcs8", "ssh/rsa2048-pkcs8"),
            ("ed25519-encrypted", "ssh/enc"),
        ] {
            let added = Self.run(home, "/usr/bin/ssh-add", [keys + "/" + file], env: ["SSH_AUTH_SOCK": openssh], stdin: "fixture passphrase\n")
            #expect(added.status == 0 || file.contains("encrypted"), "\(added)")
            let pubLine = try String(contentsOf: fixtures.appendingPathComponent(file + ".pub"), encoding: .utf8).trimmingCharacters(in: .newlines)
            let dir = home.path("pub-\(file)")
            mkdir(dir, 0o700)
            try (pubLine + "\n").write(toFile: dir + "/key.pub", atomically: true, encoding: .utf8)
            let ours = try Self.signAndVerify(home, socket: agent.socket, pub: (dir + "/key.pub", pubLine), message: "same message\n")
            #expect(ours.verified, "\(item) through coffer")
            if added.status == 0 {
                let openSSH = try Self.signAndVerify(home, socket: openssh, pub: (dir + "/key.pub", pubLine), message: "same message\n")
                #expect(openSSH.verified)
                // Ed25519 and RSA PKCS#1 v1.5 signatures are deterministic:
                // the same bytes as OpenSSH's agent makes.
                if !file.hasPrefix("ecdsa") { #expect(ours.signature == openSSH.signature, "\(item)") }
            }
        }
    }

    /// This machine's user name.
    static var userName: String {
        guard let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name else { return "root" }
        return String(cString: name)
    }

    /// A private sshd on 127.0.0.1 accepting `authorized` for this user.
    final class SSHServer {
        let process: SpawnedProcess
        let port: Int

        init(_ home: TestHome, authorized: String) throws {
            let dir = home.path("sshd")
            mkdir(dir, 0o700)
            mkdir("/run/sshd", 0o755) // sshd's privilege separation folder
            let key = Spawn.timed("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", dir + "/host"], environment: home.environment, workDir: dir)
            #expect(key.status == 0, "\(key)")
            try (authorized + "\n").write(toFile: dir + "/authorized_keys", atomically: true, encoding: .utf8)
            var started: (SpawnedProcess, Int)?
            for _ in 0..<10 where started == nil {
                let port = Int.random(in: 20000..<60000)
                let config = """
                    Port \(port)
                    ListenAddress 127.0.0.1
                    HostKey \(dir)/host
                    AuthorizedKeysFile \(dir)/authorized_keys
                    PidFile \(dir)/sshd.pid
                    StrictModes no
                    UsePAM no
                    PasswordAuthentication no
                    KbdInteractiveAuthentication no
                    PubkeyAuthentication yes
                    PubkeyAcceptedAlgorithms ssh-ed25519,rsa-sha2-256
                    PermitRootLogin prohibit-password
                    AllowUsers \(SSHInteropTests.userName)
                    """
                try config.write(toFile: dir + "/sshd_config", atomically: true, encoding: .utf8)
                guard
                    let p = Spawn.start(
                        "/usr/sbin/sshd", ["-D", "-e", "-f", dir + "/sshd_config"], environment: home.environment, workDir: dir, ownProcessGroup: true)
                else { continue }
                let deadline = Date().addingTimeInterval(SSHInteropTests.limit)
                while Date() < deadline {
                    let err = p.stderrText ?? ""
                    if err.contains("Server listening") {
                        started = (p, port)
                        break
                    }
                    if kill(p.pid, 0) != 0 || err.contains("Address already in use") { break }
                    usleep(20_000)
                }
                if started == nil {
                    p.send(SIGTERM)
                    _ = p.wait(timeout: 5)
                }
            }
            let s = try #require(started, "sshd did not start")
            process = s.0
            port = s.1
        }

        deinit {
            process.send(SIGTERM)
            _ = process.wait(timeout: 10)
        }
    }

    @Test(
        "a real sshd accepts the vault's key through the agent; after coffer lock it no longer does",
        .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd")))
    func sshLoginAndLock() throws {
        let home = Self.home()
        #expect(home.unlocked(["ssh-keygen", "ssh/login"]).status == 0)
        #expect(home.unlocked(["ssh-keygen", "ssh/login-rsa", "--type", "rsa", "--bits", "2048"]).status == 0)
        #expect(home.unlocked(["ssh-keygen", "ssh/elsewhere"]).status == 0)
        let unlock = home.unlocked(["unlock", "--shell", "sh"])
        let token = try SessionTests.token(fromShellLine: unlock.out)
        let agent = try Agent(home, env: ["COFFER_SESSION": token], passphrase: false)
        let server = try SSHServer(
            home,
            authorized: home.unlocked(["get", "ssh/login", "--field", "public-key"]).out + "\n"
                + home.unlocked(["get", "ssh/login-rsa", "--field", "public-key"]).out + "\n"
                + home.unlocked(["get", "ssh/elsewhere", "--field", "public-key"]).out)
        let ssh = [
            "-F", "/dev/null", "-o", "IdentityAgent=\(agent.socket)", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", String(server.port), "\(Self.userName)@127.0.0.1", "true",
        ]
        // The login key may sign for this sshd only (its host key's
        // fingerprint, through session-bind@openssh.com); a key bound to
        // another host is not offered and cannot log in.
        let fp = Spawn.timed(
            "/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", home.path("sshd/host.pub")], environment: home.environment, workDir: home.root.path)
        let hostFingerprint = try #require(fp.text.split(separator: " ").dropFirst().first.map(String.init))
        #expect(home.unlocked(["edit", "ssh/login", "--field", "hosts=\(hostFingerprint)"]).status == 0)
        #expect(home.unlocked(["edit", "ssh/elsewhere", "--field", "hosts=SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]).status == 0)
        let elsewherePub = try Self.publicKeyFile(home, "ssh/elsewhere")
        let elsewhere = Self.run(home, "/usr/bin/ssh", ["-o", "IdentityFile=\(elsewherePub.path)", "-o", "IdentitiesOnly=yes"] + ssh)
        #expect(elsewhere.status == 255, "\(elsewhere)")
        // The control: the same key, allowed this host, logs in.
        #expect(home.unlocked(["edit", "ssh/elsewhere", "--field", "hosts=\(hostFingerprint)"]).status == 0)
        let allowedNow = Self.run(home, "/usr/bin/ssh", ["-o", "IdentityFile=\(elsewherePub.path)", "-o", "IdentitiesOnly=yes"] + ssh)
        #expect(allowedNow.status == 0, "\(allowedNow)\n--- agent\n\(agent.log)")
        let first = Self.run(home, "/usr/bin/ssh", ssh)
        #expect(first.status == 0 && !first.timedOut, "\(first)\n--- sshd\n\(server.process.stderrText ?? "")\n--- agent\n\(agent.log)")
        // The RSA key alone (IdentityFile KEY.pub + IdentitiesOnly: the
        // per-host choice docs/ssh.md shows), where only rsa-sha2-256 is
        // accepted: the agent signs with the SHA-256 flag.
        let rsaPub = try Self.publicKeyFile(home, "ssh/login-rsa")
        let rsaOnly = ["-o", "IdentityFile=\(rsaPub.path)", "-o", "IdentitiesOnly=yes", "-o", "PubkeyAcceptedAlgorithms=rsa-sha2-256"]
        let second = Self.run(home, "/usr/bin/ssh", rsaOnly + ssh)
        #expect(second.status == 0 && !second.timedOut, "\(second)\n--- sshd\n\(server.process.stderrText ?? "")")
        #expect(home.run(["lock"], env: ["COFFER_SESSION": token]).status == 0)
        let after = Self.run(home, "/usr/bin/ssh", ssh)
        #expect(after.status == 255 && after.stderr.contains("Permission denied"), "\(after)")
        let list = Self.run(home, "/usr/bin/ssh-add", ["-l"], env: ["SSH_AUTH_SOCK": agent.socket])
        #expect(list.status == 1 && list.text.contains("no identities"), "\(list)")
    }

    @Test("git commit -S with gpg.format=ssh signs through the agent; git verify-commit accepts it")
    func gitCommitSigning() throws {
        let home = Self.home()
        let gen = home.unlocked(["ssh-keygen", "ssh/git"])
        #expect(gen.status == 0)
        let agent = try Agent(home)
        let repo = home.path("repo")
        let env = ["SSH_AUTH_SOCK": agent.socket, "GIT_CONFIG_NOSYSTEM": "1"]
        #expect(Self.run(home, "/usr/bin/git", ["init", "-q", repo], env: env).status == 0)
        for (k, v) in [("user.name", "Tester"), ("user.email", "tester@example.com"), ("gpg.format", "ssh"), ("user.signingkey", "key::" + gen.out)] {
            #expect(Self.run(home, "/usr/bin/git", ["-C", repo, "config", k, v], env: env).status == 0)
        }
        let commit = Self.run(home, "/usr/bin/git", ["-C", repo, "commit", "-q", "-S", "--allow-empty", "-m", "signed by coffer"], env: env)
        #expect(commit.status == 0 && !commit.timedOut, "\(commit)\n--- agent\n\(agent.log)")
        let allowed = home.path("allowed_signers")
        try "tester@example.com namespaces=\"git\" \(gen.out)\n".write(toFile: allowed, atomically: true, encoding: .utf8)
        let verify = Self.run(home, "/usr/bin/git", ["-C", repo, "-c", "gpg.ssh.allowedSignersFile=\(allowed)", "verify-commit", "HEAD"], env: env)
        #expect(verify.status == 0 && verify.stderr.contains("Good \"git\" signature for tester@example.com"), "\(verify)")
        // Another key's allowed-signers file does not verify it.
        let other = home.unlocked(["ssh-keygen", "ssh/other"]).out
        try "tester@example.com namespaces=\"git\" \(other)\n".write(toFile: allowed, atomically: true, encoding: .utf8)
        let refused = Self.run(home, "/usr/bin/git", ["-C", repo, "-c", "gpg.ssh.allowedSignersFile=\(allowed)", "verify-commit", "HEAD"], env: env)
        #expect(refused.status != 0, "\(refused)")
    }

    @Test("--print-env starts the agent in the background and prints the lines for eval; SIGTERM removes its socket")
    func printEnv() throws {
        let home = Self.home()
        #expect(home.unlocked(["ssh-keygen", "ssh/bg"]).status == 0)
        let r = home.unlocked(["ssh-agent", "--print-env"])
        #expect(r.status == 0, "\(r)")
        let socket = home.environment["XDG_RUNTIME_DIR"]! + "/coffer/ssh-agent.sock"
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;", "\(r)")
        let pidLine = try #require(lines.last { $0.hasPrefix("SSH_AGENT_PID=") })
        let pid = try #require(Int32(pidLine.dropFirst("SSH_AGENT_PID=".count).prefix { $0.isNumber }))
        defer { kill(pid, SIGKILL) }
        let list = Self.run(home, "/usr/bin/ssh-add", ["-l"], env: ["SSH_AUTH_SOCK": socket])
        #expect(list.status == 0 && list.text.contains("ssh/bg (ED25519)"), "\(list)")
        #expect(kill(pid, SIGTERM) == 0)
        let deadline = Date().addingTimeInterval(Self.limit)
        while FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(20_000) }
        #expect(!FileManager.default.fileExists(atPath: socket))
        #expect(!FileManager.default.fileExists(atPath: socket + ".pid"))
    }

    @Test("a key generated on replica A signs through B's agent after coffer sync")
    func keyTravelsBySync() throws {
        let a = Self.home()
        let gen = a.unlocked(["ssh-keygen", "ssh/travels"])
        #expect(gen.status == 0)
        let dir = a.path("sync")
        #expect(a.unlocked(["sync", dir]).status == 0)
        let b = TestHome()
        b.passphrase = a.passphrase
        let clone = b.unlocked(["clone", dir])
        #expect(clone.status == 0, "\(clone)")
        let agent = try Agent(b)
        let pub = try Self.publicKeyFile(b, "ssh/travels")
        #expect(pub.line == gen.out)
        #expect(try Self.signAndVerify(b, socket: agent.socket, pub: pub).verified)
    }

    @Test(
        "another user cannot use the agent even when the socket's modes would let it (SO_PEERCRED)",
        .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func otherUserRefused() throws {
        let home = Self.home()
        #expect(home.unlocked(["ssh-keygen", "ssh/mine"]).status == 0)
        let agent = try Agent(home)
        // Open the way on purpose: only the peer check is left.
        chmod(home.root.path, 0o755)
        chmod(home.path("agent"), 0o755)
        chmod(agent.socket, 0o666)
        let r = Self.run(
            home, "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/ssh-add", "-l"], env: ["SSH_AUTH_SOCK": agent.socket])
        #expect(r.status != 0 && !r.text.contains("SHA256:"), "\(r)")
        let mine = Self.run(home, "/usr/bin/ssh-add", ["-l"], env: ["SSH_AUTH_SOCK": agent.socket])
        #expect(mine.status == 0 && mine.text.contains("ssh/mine"), "\(mine)")
        #expect(agent.log.contains("refused a connection from another user (uid 65534)"), "\(agent.log)")
    }
}
