import CofferTestSupport
import Foundation
import Testing

/// Regressions for review findings, through the `coffer` binary.
@Suite("Review fixes (CLI)")
struct ReviewFixesCLITests {
    /// A dotenv file with CRLF line ends is read line by line.
    @Test func runReadsACRLFEnvFile() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-test-1").status == 0)
        try Data("A=1\r\nB=coffer://work/openai\r\n".utf8).write(to: URL(fileURLWithPath: home.path("e")))
        let r = home.coffer(["run", "--env-file", "e", "--", "/bin/sh", "-c", "printf '[%s][%s]' \"$A\" \"$B\""])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "[1][sk-test-1]")
    }

    /// `nohup coffer run -- cmd` (or any parent ignoring SIGHUP) keeps
    /// SIGHUP ignored in cmd; a signal not ignored still has its default
    /// action.
    @Test func runLeavesIgnoredSignalsIgnored() {
        let home = TestHome()
        let script = "kill -HUP $$; echo alive"
        let ignored = Spawn.run(
            "/bin/sh", ["-c", "trap '' HUP; exec \"$0\" run -- /bin/sh -c '\(script)'", CofferBinary.path],
            stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(ignored.status == 0, "\(ignored)")
        #expect(ignored.stdout == "alive\n")

        let notIgnored = Spawn.run(
            "/bin/sh", ["-c", "exec \"$0\" run -- /bin/sh -c '\(script)'", CofferBinary.path],
            stdin: nil, fd3: nil, environment: home.environment, workDir: home.root.path)
        #expect(notIgnored.status == 128 + SIGHUP, "\(notIgnored)")
        #expect(notIgnored.stdout == "")
    }

    /// `coffer inject -o LINK` writes the file LINK points to and keeps the
    /// link; a FIFO is refused with exit 73.
    @Test func injectWritesThroughASymlink() throws {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai"], stdin: "sk-test-2").status == 0)
        try "key={{ coffer://work/openai }}\n".write(toFile: home.path("t.tpl"), atomically: true, encoding: .utf8)
        try "old\n".write(toFile: home.path("real.env"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: home.path("app.env"), withDestinationPath: "real.env")
        let r = home.coffer(["inject", "-i", "t.tpl", "-o", "app.env"])
        #expect(r.status == 0, "\(r)")
        #expect(try String(contentsOfFile: home.path("real.env"), encoding: .utf8) == "key=sk-test-2\n")
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: home.path("app.env"))
        #expect(link == "real.env")

        // A FIFO is written as a stream (issue 15), never replaced.
        #expect(mkfifo(home.path("fifo"), 0o600) == 0)
        let streamed = home.shell("cat fifo > got.txt & \"$COFFER\" inject -i t.tpl -o fifo --passphrase-file \"$PW\"; s=$?; wait; exit $s", timeout: 30)
        #expect(streamed.status == 0, "\(streamed)")
        #expect(try String(contentsOfFile: home.path("got.txt"), encoding: .utf8) == "key=sk-test-2\n")
        #expect(home.fileType(home.path("fifo")) == S_IFIFO)
        // A folder is refused.
        try FileManager.default.createDirectory(atPath: home.path("folder"), withIntermediateDirectories: true)
        let refused = home.coffer(["inject", "-i", "t.tpl", "-o", "folder"])
        #expect(refused.status == 73, "\(refused)")
        #expect(refused.stderr.contains("is a folder"), "\(refused.stderr)")
    }
}
