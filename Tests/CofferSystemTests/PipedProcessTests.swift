import CofferSystem
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `PipedProcess.start`/`finish`/`cancel`: the clipboard tool is started
/// before coffer knows the value, and must never act on its input unless
/// `finish` hands it over.
@Suite("a child started early with its stdin a pipe")
struct PipedProcessTests {
    /// Removed with the test (it used to stay in /tmp).
    let scratch = TemporaryDirectory(prefix: "coffer-piped")
    var dir: String { scratch.url.path }

    @Test func finishHandsOverTheInputAndReportsTheExitStatus() throws {
        let out = dir + "/out"
        let p = try PipedProcess.start(["/bin/sh", "-c", "cat > \"$0\"; exit 3", out], environment: nil)
        // The child is running and waiting for its input.
        #expect(kill(p.pid, 0) == 0)
        let r = p.finish(input: Array("secret\u{0}bytes\n".utf8))
        #expect(r.termination.exitCode == 3 && r.termination.signal == nil)
        #expect(!r.timedOut)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("secret\u{0}bytes\n".utf8))
        // Reaped: no such child any more.
        #expect(waitpid(p.pid, nil, WNOHANG) == -1)
    }

    @Test func cancelKillsItBeforeItSeesTheEndOfItsInput() throws {
        let mark = dir + "/acted"
        let p = try PipedProcess.start(["/bin/sh", "-c", "cat > /dev/null; touch \"$0\"", mark], environment: nil)
        usleep(50_000)
        p.cancel()
        usleep(100_000)
        #expect(!FileManager.default.fileExists(atPath: mark), "the child acted on a cancelled input")
        #expect(waitpid(p.pid, nil, WNOHANG) == -1)
    }

    @Test func droppingItUnfinishedCancelsIt() throws {
        let mark = dir + "/acted"
        var pid: Int32 = 0
        do {
            let p = try PipedProcess.start(["/bin/sh", "-c", "cat > /dev/null; touch \"$0\"", mark], environment: nil)
            pid = p.pid
        }
        usleep(100_000)
        #expect(!FileManager.default.fileExists(atPath: mark))
        #expect(waitpid(pid, nil, WNOHANG) == -1)
    }

    @Test func aChildThatDoesNotExitIsKilledAtTheTimeOut() throws {
        let p = try PipedProcess.start(["/bin/sh", "-c", "exec sleep 30"], environment: nil)
        let started = Date()
        let r = p.finish(input: [], timeoutMillis: 200)
        #expect(r.timedOut)
        #expect(r.termination.signal == SIGKILL)
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func aMissingProgramIsAnErrorNotATrap() {
        #expect(throws: ChildProcessError.notFound("/nonexistent/tool")) {
            _ = try PipedProcess.start(["/nonexistent/tool"], environment: nil)
        }
    }
}
