import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real git, cloning over HTTP from a loopback server that demands
/// basic auth (`git http-backend` behind a small Python server on
/// 127.0.0.1 and a random port), with coffer as its credential helper
/// installed as `git-credential-coffer` the way `make install` does.
@Suite(
    "git credential helper with the real git",
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct GitCredentialInteropTests {
    static let server = #"""
        import base64, http.server, os, subprocess, sys
        root, user, password, portfile = sys.argv[1:5]
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self): self.serve()
            def do_POST(self): self.serve()
            def serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Authorization") != expected:
                    with open(os.path.join(root, "rejected.log"), "a") as log:
                        log.write(("with" if self.headers.get("Authorization") else "without") + " credentials\n")
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="coffer-test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                       "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1",
                       "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                       "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": os.environ["PATH"]}
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                sep = out.find(b"\r\n\r\n")
                head, rest = (out[:sep], out[sep + 4:]) if sep >= 0 else out.split(b"\n\n", 1)
                status, headers = 200, []
                for line in head.decode().splitlines():
                    k, _, v = line.partition(":")
                    if k.lower() == "status": status = int(v.split()[0])
                    elif k: headers.append((k, v.strip()))
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                self.wfile.write(rest)
            def log_message(self, *args): pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        with open(portfile + ".tmp", "w") as f: f.write(str(srv.server_address[1]))
        os.rename(portfile + ".tmp", portfile)
        srv.serve_forever()
        """#

    /// A running server, a bare repository behind it, and a git
    /// environment whose only credential helpers are the ones a test sets.
    final class Fixture: @unchecked Sendable {
        let home = TestHome()
        let process = Process()
        var port = 0
        var env: [String: String] = [:]
        let user = "alice"
        let password = "right-token-\(UUID().uuidString.prefix(8))"

        init() throws {
            home.initVault()
            let root = home.path("srv")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let g = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
            try Fixture.check("git", g + ["init", "-q", home.path("src")])
            FileManager.default.createFile(atPath: home.path("src/README"), contents: Data("hello\n".utf8))
            try Fixture.check("git", g + ["-C", home.path("src"), "add", "README"])
            try Fixture.check("git", g + ["-C", home.path("src"), "commit", "-q", "-m", "first"])
            try Fixture.check("git", ["clone", "-q", "--bare", home.path("src"), root + "/repo.git"])

            // The wrapper `make install` writes, pointing at the built binary.
            let bin = home.path("bin")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            let wrapper = bin + "/git-credential-coffer"
            let script = "#!/bin/sh\nexec '\(CofferBinary.path)' git-credential \"$@\"\n"
            FileManager.default.createFile(atPath: wrapper, contents: Data(script.utf8))
            chmod(wrapper, 0o755)

            let serverFile = home.path("server.py")
            FileManager.default.createFile(atPath: serverFile, contents: Data(GitCredentialInteropTests.server.utf8))
            let portFile = home.path("port")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", serverFile, root, user, password, portFile]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let p = Int(text) {
                    port = p
                    break
                }
                usleep(50_000)
            }
            guard port > 0 else { throw SessionTestFailure("the test HTTP server did not start") }

            let unlock = home.unlocked(["unlock", "--shell", "sh"])
            let token = try SessionTests.token(fromShellLine: unlock.out)
            env = home.environment
            env["PATH"] = bin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            env["COFFER_SESSION"] = token
            env["GIT_CONFIG_NOSYSTEM"] = "1"
            env["GIT_TERMINAL_PROMPT"] = "0"
            env["GIT_CONFIG_GLOBAL"] = home.path("gitconfig")
            FileManager.default.createFile(atPath: home.path("gitconfig"), contents: Data())
        }

        deinit {
            // SIGKILL: the test runner's children may inherit a signal mask
            // that blocks SIGTERM.
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        var host: String { "127.0.0.1:\(port)" }
        var url: String { "http://\(host)/repo.git" }

        static func check(_ program: String, _ args: [String]) throws {
            let r = Spawn.run("/usr/bin/env", [program] + args, stdin: nil, fd3: nil, environment: ProcessInfo.processInfo.environment, workDir: "/")
            guard r.status == 0 else { throw SessionTestFailure("\(program) \(args): \(r)") }
        }

        /// `git clone` into a fresh folder with these credential helpers.
        func clone(helpers: [String], into name: String) -> CLIResult {
            let config = ["-c", "credential.helper="] + helpers.flatMap { ["-c", "credential.helper=\($0)"] }
            return Spawn.run(
                "/usr/bin/env", ["git"] + config + ["clone", "-q", url, home.path(name)], stdin: nil, fd3: nil, environment: env, workDir: home.root.path)
        }

        var rejections: Int {
            ((try? String(contentsOfFile: home.path("srv/rejected.log"), encoding: .utf8)) ?? "").split(separator: "\n").count
        }
    }

    /// `git credential fill` with coffer as the only helper, no server:
    /// git asks for http what coffer keeps for https (issue 24 item 8).
    @Test func credentialFillMatchesTheProtocol() throws {
        let home = TestHome()
        home.initVault()
        let bin = home.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        FileManager.default.createFile(
            atPath: bin + "/git-credential-coffer", contents: Data("#!/bin/sh\nexec '\(CofferBinary.path)' git-credential \"$@\"\n".utf8))
        chmod(bin + "/git-credential-coffer", 0o755)
        let token = try SessionTests.token(fromShellLine: home.unlocked(["unlock", "--shell", "sh"]).out)
        var env = home.environment
        env["PATH"] = bin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["COFFER_SESSION"] = token
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["GIT_CONFIG_GLOBAL"] = home.path("gitconfig")
        FileManager.default.createFile(atPath: home.path("gitconfig"), contents: Data())
        func fill(_ proto: String) -> CLIResult {
            Spawn.run(
                "/usr/bin/env", ["git", "-c", "credential.helper=", "-c", "credential.helper=coffer", "credential", "fill"],
                stdin: "protocol=\(proto)\nhost=forge.example.org\n\n", fd3: nil, environment: env, workDir: home.root.path)
        }
        #expect(home.unlocked(["add", "git/forge.example.org", "--type", "login", "--field", "username=alice"], stdin: "tls-only-token\n").status == 0)
        var r = fill("https")
        #expect(r.status == 0 && r.stdout.contains("password=tls-only-token"), "\(r)")
        // Over plain http git gets nothing from coffer (and cannot prompt).
        r = fill("http")
        #expect(r.status != 0 && !r.stdout.contains("tls-only-token") && !r.stderr.contains("tls-only-token"), "\(r)")
        // Unless the item lists http on purpose.
        #expect(home.unlocked(["edit", "git/forge.example.org", "--field", "git-protocols=https,http"]).status == 0)
        r = fill("http")
        #expect(r.status == 0 && r.stdout.contains("username=alice\npassword=tls-only-token"), "\(r)")
    }

    @Test func cloneWithTheCredentialFromCoffer() throws {
        let f = try Fixture()
        // Without any credential the server refuses and git cannot prompt.
        let refused = f.clone(helpers: [], into: "none")
        #expect(refused.status != 0)
        // The item named by the convention git/HOST.
        let add = f.home.unlocked(
            ["add", "git/\(f.host)", "--type", "login", "--field", "username=\(f.user)", "--field", "git-protocols=http"], stdin: f.password + "\n")
        #expect(add.status == 0, "\(add)")
        let r = f.clone(helpers: ["coffer"], into: "clone1")
        #expect(r.status == 0, "\(r)")
        #expect((try? String(contentsOfFile: f.home.path("clone1/README"), encoding: .utf8)) == "hello\n")
        #expect(!r.stderr.contains(f.password))
    }

    @Test func loginItemMatchedByURL() throws {
        let f = try Fixture()
        let add = f.home.unlocked(
            ["add", "work/forge", "--type", "login", "--field", "username=\(f.user)", "--field", "url=http://\(f.host)/"], stdin: f.password + "\n")
        #expect(add.status == 0, "\(add)")
        let r = f.clone(helpers: ["coffer"], into: "clone2")
        #expect(r.status == 0, "\(r)")
    }

    @Test func aWrongStoredPasswordIsErasedByGit() throws {
        let f = try Fixture()
        let add = f.home.unlocked(
            ["add", "git/\(f.host)", "--type", "login", "--field", "username=\(f.user)", "--field", "git-protocols=http"], stdin: "stale-password\n")
        #expect(add.status == 0)
        let r = f.clone(helpers: ["coffer"], into: "clone3")
        #expect(r.status != 0)
        #expect(f.rejections >= 1)
        // git called `erase` with the rejected credential: the item is gone.
        let get = f.home.unlocked(["get", "git/\(f.host)"])
        #expect(get.status == 66, "\(get)")
    }

    @Test func storeAfterALoginAnotherHelperSupplied() throws {
        let f = try Fixture()
        let other = "!f() { test \"$1\" = get && printf 'username=\(f.user)\\npassword=\(f.password)\\n'; }; f"
        let r = f.clone(helpers: ["coffer", other], into: "clone4")
        #expect(r.status == 0, "\(r)")
        // git told every helper to store what worked: coffer has it now…
        let get = f.home.unlocked(["get", "git/\(f.host)"])
        #expect(get.out == f.password, "\(get)")
        #expect(f.home.unlocked(["get", "git/\(f.host)", "--field", "username"]).out == f.user)
        // …and serves it alone next time.
        let again = f.clone(helpers: ["coffer"], into: "clone5")
        #expect(again.status == 0, "\(again)")
    }
}
