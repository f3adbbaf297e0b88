import CofferTestSupport
import Foundation
import Testing

/// The nearest command or item name for a typo, and the warnings of `add`
/// and the configuration file.
@Suite("suggestions and warnings, black-box")
struct SuggestionCLITests {
    /// Adds an api-key item `name` holding a key that must never appear in an error.
    static func addKey(_ home: TestHome, _ name: String, _ key: String = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB") {
        let r = home.unlocked(["add", name, "--type", "api-key"], stdin: key)
        #expect(r.status == 0, "\(r)")
    }

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
        Self.addKey(home, "work/openai")
        let r = home.unlocked(["get", "work/opneai"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("no item named 'work/opneai'"), "\(r)")
        #expect(r.stderr.contains("did you mean `work/openai`?"), "\(r)")
        #expect(!r.stderr.contains("sk-proj"), "a value leaked into the error")
        let far = home.unlocked(["get", "personal/bank"])
        #expect(far.status == 66 && !far.stderr.contains("did you mean"), "\(far)")
    }

    @Test func aLastPathComponentFindsTheFullName() {
        let home = TestHome()
        home.initVault()
        Self.addKey(home, "work/openai")
        let one = home.unlocked(["get", "openai"])
        #expect(one.status == 66, "\(one)")
        #expect(one.stderr.contains("did you mean `work/openai`?"), "\(one)")
        // A typo of the last component too.
        #expect(home.unlocked(["get", "opneai"]).stderr.contains("did you mean `work/openai`?"))
        Self.addKey(home, "home/openai", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789CD")
        let two = home.unlocked(["get", "openai"])
        #expect(two.stderr.contains("did you mean one of `home/openai`, `work/openai`?"), "\(two)")
        #expect(!two.stderr.contains("sk-proj"), "a value leaked into the error")
    }

    @Test func suggestedNamesAreQuotedForTheShell() {
        let home = TestHome()
        home.initVault()
        Self.addKey(home, "work/my key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789EF")
        let r = home.unlocked(["get", "work/my kye"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("did you mean `'work/my key'`?"), "\(r)")
        Self.addKey(home, "it's", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789EF")
        #expect(home.unlocked(["get", "its"]).stderr.contains(#"did you mean `'it'\''s'`?"#))
    }

    @Test func aDivisionSlashIsSaidInWords() {
        let home = TestHome()
        home.initVault()
        // What an import makes of a title "web/site" (kept as one name).
        Self.addKey(home, "web\u{2215}site", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789EF")
        let id = home.unlocked(["show", "web\u{2215}site", "--json"]).stdout
        let r = home.unlocked(["get", "web/site"])
        #expect(r.status == 66, "\(r)")
        #expect(r.stderr.contains("division slash (U+2215)"), "\(r)")
        #expect(r.stderr.contains("`id:"), "\(r)")
        // The look-alike name is not shown: it would read as what was typed.
        #expect(!r.stderr.contains("\u{2215}"), "\(r)")
        // The id offered addresses the item.
        let offered = r.stderr.components(separatedBy: "`id:").dropFirst().first.map { "id:" + $0.prefix(8) } ?? ""
        #expect(id.contains(String(offered.dropFirst(3))), "\(offered) not in \(id)")
        #expect(home.unlocked(["show", offered]).status == 0)
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
