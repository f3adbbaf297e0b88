import CofferTestSupport
import Foundation
import Testing

/// Every usage error has one shape and one exit code (docs/exit-codes.md):
/// argument-parser's own refusals, a command's rule that argument-parser
/// cannot express, and a refusal from CofferKit alike.
@Suite("usage errors, black-box")
struct UsageErrorCLITests {
    static func expectUsageShape(_ r: CLIResult, message: String, hintContains: String) {
        #expect(r.status == 64, "\(r)")
        let lines = r.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(r)")
        #expect(lines.first == "coffer: error: \(message)", "\(r)")
        #expect(lines.last?.hasPrefix("coffer: hint: ") == true && lines.last!.contains(hintContains), "\(r)")
        #expect(r.stdout.isEmpty, "\(r)")
    }

    @Test func everyUsageErrorHasTheSameShape() {
        let home = TestHome()
        home.initVault()
        // argument-parser: an unknown option, a missing argument.
        Self.expectUsageShape(home.run(["ls", "--bogus"]), message: "Unknown option '--bogus'", hintContains: "see `coffer ls --help`")
        Self.expectUsageShape(home.run(["sync"]), message: "Missing expected argument '<dir>'", hintContains: "Usage: coffer sync")
        // A command's own rule (was argument-parser's ValidationError).
        Self.expectUsageShape(
            home.unlocked(["sync", home.path("dir"), "--remote", "origin"]), message: "--remote needs --git",
            hintContains: "see `coffer sync --help`")
        Self.expectUsageShape(
            home.unlocked(["clone"]), message: "give a sync folder or a bundle file to clone from", hintContains: "see `coffer clone --help`")
        // CofferKit's refusal of an argument value.
        let r = home.unlocked(["add", "/bad", "--type", "note"])
        #expect(r.status == 64 && r.stderr.hasPrefix("coffer: error: invalid item name"), "\(r)")
    }

    @Test func helpAndVersionAreNoErrors() {
        let home = TestHome()
        #expect(home.run(["ls", "--help"]).status == 0)
        #expect(home.run(["--version"]).status == 0)
    }
}
