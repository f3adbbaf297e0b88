import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A private X server (Xvfb) for the clipboard tests.
final class XServer: @unchecked Sendable {
    let display: String
    let process: Process

    init() throws {
        // A display number unlikely to be taken; retried on collision.
        for _ in 0..<5 {
            let n = 100 + Int.random(in: 0..<800)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
            p.arguments = [":\(n)", "-nolisten", "tcp", "-screen", "0", "320x240x16"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            // Ready when its socket exists.
            for _ in 0..<100 where p.isRunning {
                if FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)") {
                    display = ":\(n)"
                    process = p
                    return
                }
                usleep(50_000)
            }
            if p.isRunning {
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
            }
        }
        throw XServerFailure()
    }

    struct XServerFailure: Error {}

    deinit {
        // SIGKILL: the test runner's threads may block SIGTERM, and a
        // child inherits that mask. Ends the xclip that served the
        // selection too (it loses its display).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// What the CLIPBOARD selection holds (xclip -o), nil when empty.
    func clipboard() -> String? {
        let r = Spawn.run(
            "/usr/bin/env", ["DISPLAY=\(display)", "xclip", "-selection", "clipboard", "-out"], stdin: nil, fd3: nil,
            environment: ProcessInfo.processInfo.environment, workDir: "/")
        return r.status == 0 && !r.stdout.isEmpty ? r.stdout : nil
    }

    func setClipboard(_ text: String) {
        _ = Spawn.run(
            "/usr/bin/env", ["DISPLAY=\(display)", "xclip", "-selection", "clipboard", "-in"], stdin: text, fd3: nil,
            environment: ProcessInfo.processInfo.environment, workDir: "/")
    }
}

/// Every process's command line, to check that no secret is in argv.
private func allCommandLines() -> [String] {
    let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return procs.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
        (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0, as: UTF8.self) }
    }
}

@Suite("coffer clip with a real X clipboard (Xvfb, xclip)", .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct ClipInteropTests {
    func home(_ x: XServer) -> TestHome {
        let home = TestHome()
        home.environment["DISPLAY"] = x.display
        home.initVault()
        #expect(home.unlocked(["add", "svc/api", "--source", "x"], stdin: "clip-SECRET-4711").status == 0)
        #expect(
            home.unlocked(["add", "svc/login", "--type", "login", "--field", "username=octo", "--secret", "password"], stdin: "pw-SECRET-0815").status == 0)
        return home
    }

    @Test func copiesThroughAPipeAndClearsAfterTheDelay() throws {
        let x = try XServer()
        let home = home(x)
        let r = home.unlocked(["clip", "svc/api", "--clear-after", "2s"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("xclip") && r.stderr.contains("2s"))
        #expect(x.clipboard() == "clip-SECRET-4711")
        // Never in any process's argv (xclip serving the selection, the
        // detached clearer).
        #expect(!allCommandLines().contains { $0.contains("clip-SECRET") })
        #expect(allCommandLines().contains { $0.contains("clip-clear") })
        var cleared = false
        for _ in 0..<60 where !cleared {
            usleep(100_000)
            cleared = x.clipboard() == nil
        }
        #expect(cleared, "the clipboard still holds the value")
        // A field by name.
        #expect(home.unlocked(["clip", "svc/login", "--field", "username", "--clear-after", "0"]).status == 0)
        #expect(x.clipboard() == "octo")
    }

    @Test func leavesSomethingCopiedSinceAlone() throws {
        let x = try XServer()
        let home = home(x)
        #expect(home.unlocked(["clip", "svc/login", "--clear-after", "2"]).status == 0)
        #expect(x.clipboard() == "pw-SECRET-0815")
        x.setClipboard("something else")
        sleep(4)
        #expect(x.clipboard() == "something else")
    }
}

/// With a shell session `coffer clip` starts the clipboard tool before it
/// unlocks (docs/user-guide.md, "clip"): the tool must get the value when
/// all went well, and nothing — the clipboard stays as it was — when not.
@Suite(
    "coffer clip with a session and a real X clipboard (Xvfb, xclip)", .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"), .serialized)
struct ClipSessionInteropTests {
    struct NoSession: Error {}

    func setUp(_ x: XServer) throws -> (TestHome, [String: String]) {
        let home = ClipInteropTests().home(x)
        FileManager.default.createFile(atPath: home.path("key.bin"), contents: Data([0, 1, 2, 3]))
        #expect(home.unlocked(["attach", "svc/api", home.path("key.bin"), "--as", "backup"]).status == 0)
        let r = home.unlocked(["unlock", "--shell", "sh"])
        let prefix = "export COFFER_SESSION='"
        guard r.out.hasPrefix(prefix) else { throw NoSession() }
        return (home, ["COFFER_SESSION": String(r.out.dropFirst(prefix.count).dropLast(2))])
    }

    @Test func copiesWithTheSessionOnBothPaths() throws {
        let x = try XServer()
        let (home, env) = try setUp(x)
        // `clip NAME`: the fast path, clearing in 45 s.
        let fast = home.run(["clip", "svc/api"], env: env)
        #expect(fast.status == 0, "\(fast)")
        #expect(fast.stderr.contains("clearing it in 45s"))
        #expect(x.clipboard() == "clip-SECRET-4711")
        #expect(!allCommandLines().contains { $0.contains("clip-SECRET") })
        #expect(clearers(of: home) == 1)
        // In a process group of its own: the terminal's Ctrl-C (sent to the
        // foreground group, which the clearer was started from) misses it.
        #expect(clearerGroups(of: home).allSatisfy { $0.pid == $0.pgid && $0.pgid != getpgrp() })
        // With options: argument-parser's path, the same early start.
        let field = home.run(["clip", "svc/login", "--field", "username", "--clear-after", "1"], env: env)
        #expect(field.status == 0, "\(field)")
        #expect(x.clipboard() == "octo")
        var cleared = false
        for _ in 0..<40 where !cleared {
            usleep(100_000)
            cleared = x.clipboard() == nil
        }
        #expect(cleared, "the clipboard still holds the value")
    }

    @Test func aFailureAfterTheToolStartedLeavesTheClipboardAsItWas() throws {
        let x = try XServer()
        let (home, env) = try setUp(x)
        x.setClipboard("what the user copied")
        let missing = home.run(["clip", "svc/nope"], env: env)
        #expect(missing.status == 66, "\(missing)")
        #expect(missing.stderr.contains("svc/nope"))
        let attachment = home.run(["clip", "svc/api", "--field", "backup"], env: env)
        #expect(attachment.status == 64, "\(attachment)")
        #expect(attachment.stderr.contains("attachment"))
        let badSession = home.run(["clip", "svc/api"], env: ["COFFER_SESSION": "coffer-session-v1.0000.bogus"])
        #expect(badSession.status == 77, "\(badSession)")
        // The started xclip was killed before it saw the end of its input:
        // it never took the selection, not even with an empty value.
        usleep(200_000)
        #expect(x.clipboard() == "what the user copied")
        #expect(clearers(of: home) == 0, "a clearer was started for a failed clip")
    }

    @Test func aToolThatFailsIsAnErrorAndLeavesNoClearer() throws {
        let x = try XServer()
        let (home, env) = try setUp(x)
        var broken = env
        broken["DISPLAY"] = ":4711"
        let r = home.run(["clip", "svc/api"], env: broken)
        #expect(r.status == 70, "\(r)")
        #expect(r.stderr.contains("xclip failed") && r.stderr.contains("not set"), "\(r)")
        // The clearer, started alongside the tool, got no value: it ends at
        // once instead of waiting 45 s.
        var left = clearers(of: home)
        for _ in 0..<50 where left > 0 {
            usleep(100_000)
            left = clearers(of: home)
        }
        #expect(left == 0, "a clearer is still waiting after a failed clip")
    }

    /// The pid and process group of each clearer of `home`.
    func clearerGroups(of home: TestHome) -> [(pid: Int32, pgid: Int32)] {
        clearerPIDs(of: home).compactMap { pid in
            // /proc/PID/stat: "pid (comm) state ppid pgrp …"
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, let p = Int32(pid), let g = Int32(fields[2]) else { return nil }
            return (p, g)
        }
    }

    /// Running `coffer clip-clear` processes started for `home` (its HOME
    /// in their environment; other tests' clearers run meanwhile).
    func clearers(of home: TestHome) -> Int { clearerPIDs(of: home).count }

    func clearerPIDs(of home: TestHome) -> [String] {
        let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return procs.filter { $0.allSatisfy(\.isNumber) }.filter { pid in
            guard let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                String(decoding: cmd, as: UTF8.self).contains("clip-clear"),
                let env = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
            else { return false }
            return String(decoding: env, as: UTF8.self).contains(home.environment["HOME"] ?? "?")
        }
    }
}

@Suite("coffer clip errors")
struct ClipErrorTests {
    @Test func noToolOrNoDisplayIsOneClearLine() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "svc/api"], stdin: "v").status == 0)
        var env = home.environment
        env["DISPLAY"] = ":4711"
        env["PATH"] = home.path("empty-bin")
        let noTool = Spawn.run(
            CofferBinary.path, ["clip", "svc/api", "--passphrase-fd", "3"], stdin: nil, fd3: home.passphrase + "\n", environment: env, workDir: home.root.path)
        #expect(noTool.status == 66)
        #expect(noTool.stderr.contains("wl-copy") && noTool.stderr.contains("xclip") && noTool.stderr.contains("xsel"), "\(noTool)")
        let noDisplay = home.unlocked(["clip", "svc/api"])
        #expect(noDisplay.status == 66)
        #expect(noDisplay.stderr.contains("DISPLAY"), "\(noDisplay)")
        #expect(home.unlocked(["clip", "svc/api", "--clear-after", "soon"]).status == 64)
        #expect(home.unlocked(["clip", "svc/api", "--clear-after", "25h"]).status == 64)
    }
}
