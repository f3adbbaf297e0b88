import ArgumentParser
import CofferKit
import Testing

@testable import coffer

/// The parser-free paths (FastPath, AddFastPath) against argument-parser's
/// own definitions: every form a fast path takes is parsed by
/// argument-parser too, and must give the command and the values the fast
/// path assumes. A new option default, a renamed option or a changed type
/// fails here instead of drifting.
@Suite("fast paths against argument-parser's definitions")
struct FastPathDriftTests {
    static func parse<T: ParsableCommand>(_ args: [String], as: T.Type) throws -> T {
        let command = try Coffer.parseAsRoot(args)
        guard let typed = command as? T else { throw Mismatch("\(args) parses as \(type(of: command)), not \(T.self)") }
        return typed
    }

    struct Mismatch: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    @Test func theDailyVerbsOptionLessFormsHaveTheFastPathsValues() throws {
        let get = try Self.parse(["get", "work/a"], as: Get.self)
        #expect(get.name == "work/a" && get.field == nil && !get.json && get.out == nil)
        let show = try Self.parse(["show", "work/a"], as: Show.self)
        #expect(show.name == "work/a" && !show.reveal && !show.json)
        let otp = try Self.parse(["otp", "work/a"], as: Otp.self)
        #expect(otp.name == "work/a" && otp.field == Otp.defaultField && otp.at == nil && !otp.json)
        let clip = try Self.parse(["clip", "work/a"], as: Clip.self)
        #expect(clip.name == "work/a" && clip.field == nil && clip.clearAfter == Clip.defaultClearAfter)
        #expect(try Clip.parseDelay(Clip.defaultClearAfter) == 45)
        for (args, prefix, tree) in [(["ls"], nil, false), (["ls", "--tree"], nil, true), (["ls", "work/"], "work/", false)] as [([String], String?, Bool)] {
            let ls = try Self.parse(args, as: List.self)
            #expect(ls.prefix == prefix && ls.tree == tree && ls.tag == nil && ls.type == nil && !ls.expired && ls.expiring == nil && !ls.json, "\(args)")
        }
        let find = try Self.parse(["find", "term"], as: Find.self)
        #expect(find.term == "term" && !find.json)
    }

    /// `--vault PATH` wherever argument-parser takes it (after the verb,
    /// before or after the name; `coffer --vault PATH VERB` is moved there
    /// first): the fast path takes the same path and leaves the same words.
    @Test func theVaultOptionIsArgumentParsers() throws {
        let forms: [[String]] = [
            ["get", "--vault", "/v/a.coffer", "work/a"], ["get", "work/a", "--vault", "/v/a.coffer"], ["get", "--vault=/v/a.coffer", "work/a"],
            ["show", "work/a", "--vault", "v.coffer"], ["otp", "--vault", "~/x.coffer", "work/a"], ["find", "--vault", "/v", "term"],
            ["ls", "--vault", "/v"], ["ls", "--tree", "--vault", "/v"], ["ls", "--vault", "/v", "work/"],
            ["add", "--vault", "/v", "work/a", "--type", "login"], ["add", "work/a", "--field", "u=me", "--vault=/v"],
        ]
        for form in forms {
            let moved = CommandLineSpelling.movingGlobalOptions(form, root: Coffer.self)
            #expect(moved == form, "\(form)")
            let (rest, vault) = try #require(FastPath.withoutVaultOption(form), "\(form)")
            #expect(!rest.contains { $0.hasPrefix("--vault") })
            let parsed = try Coffer.parseAsRoot(form)
            let options: VaultOptions
            switch parsed {
            case let c as Get:
                options = c.options
                #expect(c.name == rest.last)
            case let c as Show:
                options = c.options
                #expect(c.name == rest.last)
            case let c as Otp:
                options = c.options
                #expect(c.name == rest.last)
            case let c as Find:
                options = c.options
                #expect(c.term == rest.last)
            case let c as List:
                options = c.options
                #expect(c.prefix == (rest.count > 1 && rest.last != "--tree" ? rest.last : nil))
            case let c as Add:
                options = c.options
                #expect(AddFastPath.request(Array(rest.dropFirst())) != nil, "\(form)")
            default: throw Mismatch("\(form) parses as \(type(of: parsed))")
            }
            #expect(options.vault == vault, "\(form)")
        }
        // Global spelling: moved behind the verb, then taken the same way.
        let global = CommandLineSpelling.movingGlobalOptions(["--vault", "/v/a.coffer", "get", "work/a"], root: Coffer.self)
        #expect(FastPath.withoutVaultOption(global)?.vault == "/v/a.coffer")
        // Left to argument-parser: twice, bare, empty, an option as the path, after `--`.
        for form in [["get", "--vault", "/a", "--vault", "/b", "x"], ["get", "x", "--vault"], ["get", "--vault=", "x"], ["get", "--vault", "-x", "y"]] {
            #expect(FastPath.withoutVaultOption(form) == nil, "\(form)")
        }
        #expect(FastPath.withoutVaultOption(["get", "--", "--vault"])?.vault == nil)
    }

    /// The detached clipboard clearer: every line `ClipClear.direct` takes
    /// parses to the same tool and delay (a value starting with `-` is an
    /// option to argument-parser, which refuses the line).
    @Test func theClipboardClearersDirectFormIsArgumentParsers() throws {
        var taken = 0
        for tool in ["xclip", "wl-copy", "-x", "--after"] {
            for after in ["45", "0", "-1", "x", "--tool"] {
                let args = ["clip-clear", "--tool", tool, "--after", after]
                guard let direct = ClipClear.direct(args) else { continue }
                taken += 1
                let parsed = try Self.parse(args, as: ClipClear.self)
                #expect(parsed.tool == direct.tool && parsed.after == direct.after, "\(args)")
            }
        }
        #expect(taken == 4)
        #expect(ClipClear.direct(["clip-clear", "--tool", "xclip", "--after", "-1"]) == nil)
    }

    /// Generated `add` command lines: every one AddFastPath takes must be
    /// the same request as argument-parser's parse of it.
    @Test func addFastPathRequestsAreArgumentParsersRequests() throws {
        let names = ["work/a", "a b", "x"]
        let options: [[String]] = [
            [], ["--type", "login"], ["--type", "custom"], ["--type", "email"], ["--source", "openai"], ["--url", "https://example.com"],
            ["--field", "user=me"], ["--field", "a=1", "--field", "b=2"], ["--secret", "token"], ["--tag", "t1"], ["--tag", "t1", "--tag", "t2"],
            ["--type", "login", "--field", "username=me", "--url", "https://e.com", "--tag", "t"],
            // Forms the fast path must leave alone (argument-parser's).
            ["--expires", "2030-01-01"], ["--local-only"], ["--generate"], ["--force"], ["--json"], ["--type"], ["--tag", "-x"],
        ]
        var taken = 0
        for name in names {
            for o in options {
                for args in [[name] + o, o + [name]] {
                    guard let fast = AddFastPath.request(args) else { continue }
                    taken += 1
                    let parsed = try Self.parse(["add"] + args, as: Add.self)
                    #expect(parsed.request == fast, "add \(args)")
                }
            }
        }
        // The forms with options argument-parser alone knows were refused.
        #expect(AddFastPath.request(["x", "--expires", "2030-01-01"]) == nil)
        #expect(AddFastPath.request(["x", "--generate"]) == nil)
        #expect(taken >= 20, "the fast path took only \(taken) forms")
    }
}
