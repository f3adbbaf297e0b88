import CofferTestSupport
import Foundation
import Testing

/// The nearest command or item name for a typo, and the warnings of `add`
/// and the configuration file.
@Suite("suggestions and warnings, black-box")
struct SuggestionCLITests {
    @Test func mistypedCommandGetsTheNearestOne() {
        let home = TestHome()
        let r = home.run(["lsit"])
        #expect(r.status == 64, "\(r)")
        #expect(r.stderr.contains("coffer: error: unknown command 'lsit'"), "\(r)")
        #expect(r.stderr.contains("did you mean `coffer ls`?"), "\(r)")
        let far = home.run(["frobnicate"])
        #expect(far.status == 64, "\(far)")
        #expect(!far.stderr.contains("did you mean"), "\(far)")
        // Real commands and help are untouched.
        #expect(home.run(["help"]).status == 0)
        #expect(home.run(["ls", "--help"]).status == 0)
    }

    @Test func mistypedItemNameGetsTheNearestOne() {
        let home = TestHome()
        home.initVault()
        #expect(home.unlocked(["add", "work/openai", "--type", "api-key"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB").status == 0)
        let r = home.unlocked(["get", "work/opneai"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("no item named 'work/opneai'"), "\(r)")
        #expect(r.stderr.contains("did you mean `work/openai`?"), "\(r)")
        #expect(!r.stderr.contains("sk-proj"), "a value leaked into the error")
        let far = home.unlocked(["get", "personal/bank"])
        #expect(far.status == 66 && !far.stderr.contains("did you mean"), "\(far)")
    }

    @Test func misspelledConfigKeyIsReported() throws {
        let home = TestHome()
        home.initVault()
        let dir = home.path("home/.config/coffer")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = home.write("home/.config/coffer/config", "session.timout = 5m\n")
        let r = home.unlocked(["unlock"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("config:1: unknown key 'session.timout' (did you mean session.timeout?); ignored"), "\(r)")
    }

    @Test func multiLineNotesGetNoKeyWarning() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "notes/recovery", "--type", "note"], stdin: "first line\nsecond line with spaces\n")
        #expect(r.status == 0, "\(r)")
        #expect(!r.stderr.contains("warning"), "\(r)")
        let get = home.unlocked(["get", "notes/recovery"])
        #expect(get.stdout.contains("first line\nsecond line with spaces"), "\(get)")
    }

    @Test func pastExpiryWarns() {
        let home = TestHome()
        home.initVault()
        let r = home.unlocked(["add", "old", "--type", "api-key", "--expires", "2020-01-01"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(r.status == 0, "\(r)")
        #expect(r.stderr.contains("--expires 2020-01-01 is in the past"), "\(r)")
        let future = home.unlocked(["add", "new", "--type", "api-key", "--expires", "30d"], stdin: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB")
        #expect(future.status == 0 && !future.stderr.contains("in the past"), "\(future)")
    }
}
