import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Output paths (issue 15): `-` is standard output, links are written
/// through, devices and FIFOs are streams, nothing crashes.
@Suite("output paths, black-box")
struct OutputPathTests {
    static func homeWithItem() -> TestHome {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-1\n").status == 0)
        return home
    }

    static let magic = Data("COFFERB".utf8)

    @Test(arguments: [["--out", "-"], ["--out=-"]])
    func exportDashIsStandardOutput(args: [String]) throws {
        let home = Self.homeWithItem()
        let r = home.timed(["export"] + args, unlocked: true)
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("wrote full bundle standard output: 1 item"), "\(r)")
        #expect(!FileManager.default.fileExists(atPath: home.path("-")))
        // What came out is a bundle another replica can be cloned from.
        try r.stdout.write(to: URL(fileURLWithPath: home.path("piped.cb")))
        let cl = home.unlocked(["clone", "piped.cb", "--vault", "b.coffer"])
        #expect(cl.status == 0, "\(cl)")
        #expect(home.unlocked(["get", "work/openai", "--vault", "b.coffer"]).stdout == "sk-1\n")
    }

    @Test func summaryDashIsStandardOutputAndFeedsExportSince() throws {
        let home = Self.homeWithItem()
        let r = home.timed(["summary", "--out", "-"], unlocked: true)
        #expect(r.status == 0, "\(r)")
        #expect(!FileManager.default.fileExists(atPath: home.path("-")))
        try r.stdout.write(to: URL(fileURLWithPath: home.path("s.sum")))
        let ex = home.unlocked(["export", "--since", "s.sum", "--out", "d.cb"])
        #expect(ex.status == 0, "\(ex)")
        #expect(ex.stderr.contains("wrote delta bundle d.cb: 0 items"), "\(ex)")
    }

    @Test func dashReadsStandardInput() throws {
        let home = Self.homeWithItem()
        #expect(home.unlocked(["export", "--out", "full.cb"]).status == 0)
        let cl = home.shell("\"$COFFER\" clone - --vault b.coffer --passphrase-file \"$PW\" < full.cb")
        #expect(cl.status == 0, "\(cl)")
        #expect(home.unlocked(["get", "work/openai", "--vault", "b.coffer"]).stdout == "sk-1\n")
        #expect(home.unlocked(["add", "more", "--type", "api-key", "--secret", "key"], stdin: "sk-2\n").status == 0)
        // The receiver's summary from stdin, the delta into stdin of import.
        let delta = home.shell(
            "\"$COFFER\" summary --out - --vault b.coffer --passphrase-file \"$PW\" | \"$COFFER\" export --since - --out - --passphrase-file \"$PW\" | \"$COFFER\" import - --vault b.coffer --passphrase-file \"$PW\""
        )
        #expect(delta.status == 0, "\(delta)")
        #expect(home.unlocked(["get", "more", "--vault", "b.coffer"]).stdout == "sk-2\n")
        #expect(!FileManager.default.fileExists(atPath: home.path("-")))
    }

    @Test func devStdoutIsWrittenNotReplaced() throws {
        let home = Self.homeWithItem()
        let r = home.timed(["export", "--out", "/dev/stdout"], unlocked: true)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.count > 100)
        #expect(home.fileType("/dev/stdout") == S_IFLNK)
    }

    @Test func aSymbolicLinkIsWrittenThrough() throws {
        let home = Self.homeWithItem()
        try FileManager.default.createDirectory(atPath: home.path("real"), withIntermediateDirectories: true)
        #expect(symlink(home.path("real/bundle.cb"), home.path("link.cb")) == 0)
        for _ in 0..<2 { // creating the target, then replacing it
            let r = home.unlocked(["export", "--out", "link.cb"])
            #expect(r.status == 0, "\(r)")
            #expect(home.fileType(home.path("link.cb")) == S_IFLNK)
            #expect(home.fileType(home.path("real/bundle.cb")) == S_IFREG)
        }
        #expect(home.run(["inspect", "link.cb"]).status == 0)
        // The summary too.
        #expect(symlink(home.path("real/s.sum"), home.path("s-link.sum")) == 0)
        #expect(home.unlocked(["summary", "--out", "s-link.sum"]).status == 0)
        #expect(home.fileType(home.path("s-link.sum")) == S_IFLNK)
        #expect(home.fileType(home.path("real/s.sum")) == S_IFREG)
        // No temporary file stays in either folder.
        #expect(home.names(in: home.path("real")) == ["bundle.cb", "s.sum"])
    }

    @Test func aCharacterDeviceIsAStream() {
        let home = Self.homeWithItem()
        let r = home.timed(["export", "--out", "/dev/null"], unlocked: true)
        #expect(r.status == 0, "\(r)")
        #expect(home.fileType("/dev/null") == S_IFCHR)
        let s = home.timed(["summary", "--out", "/dev/null"], unlocked: true)
        #expect(s.status == 0, "\(s)")
        #expect(home.fileType("/dev/null") == S_IFCHR)
    }

    @Test func aFIFOIsAStream() throws {
        let home = Self.homeWithItem()
        let fifo = home.path("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)
        // A reader in the shell: cat copies what the FIFO carries.
        let r = home.shell("cat pipe > got.cb & \"$COFFER\" export --out pipe --passphrase-file \"$PW\"; s=$?; wait; exit $s")
        #expect(r.status == 0, "\(r)")
        #expect(home.fileType(fifo) == S_IFIFO)
        #expect(home.run(["inspect", "got.cb"]).status == 0)
    }

    @Test func aFolderIsRefusedWithOneLine() throws {
        let home = Self.homeWithItem()
        try FileManager.default.createDirectory(atPath: home.path("dir"), withIntermediateDirectories: true)
        let r = home.unlocked(["export", "--out", "dir"])
        #expect(r.status == 73, "\(r)")
        #expect(r.stderr.hasPrefix("coffer: error: "))
        #expect(r.stderr.contains("is a folder"))
        #expect(home.names(in: home.path("dir")).isEmpty)
    }

    @Test func injectDashIsStandardOutput() {
        let home = Self.homeWithItem()
        FileManager.default.createFile(atPath: home.path("t.tpl"), contents: Data("key={{ coffer://work/openai/key }}\n".utf8))
        let r = home.timed(["inject", "-i", "t.tpl", "-o", "-"], unlocked: true)
        #expect(r.status == 0, "\(r)")
        #expect(r.text == "key=sk-1\n")
        #expect(!FileManager.default.fileExists(atPath: home.path("-")))
    }

    /// Odd `--out` values: none may end the process with a signal.
    @Test(arguments: ["", "-", "--", "/", ".", "..", "/dev/fd/9", "/proc/self/fd/x", "/dev/stderr", "no/such/dir/x.cb", String(repeating: "x", count: 300)])
    func noOutArgumentCrashes(value: String) {
        let home = Self.homeWithItem()
        for cmd in ["export", "summary"] {
            let r = home.timed([cmd, "--out=\(value)"], unlocked: true)
            #expect(r.status < 128, "\(cmd) --out=\(value): \(r)")
            #expect(!r.timedOut)
            if r.status != 0 { #expect(r.stderr.contains("coffer: error: ") || r.stderr.contains("Error:"), "\(r)") }
        }
    }
}
