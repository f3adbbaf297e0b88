import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

@Suite("coffer:// references")
struct ReferenceTests {
    @Test func parsesSegmentsAndFieldQuery() throws {
        var r = try Reference(parsing: "coffer://work/openai")
        #expect(r.segments == ["work", "openai"] && r.explicitField == nil)
        #expect(r.wholeName == "work/openai")
        #expect(r.splitReading! == ("work", "openai"))
        r = try Reference(parsing: "coffer://openai")
        #expect(r.splitReading == nil)
        r = try Reference(parsing: "coffer://my stuff/db one/user name")
        #expect(r.segments == ["my stuff", "db one", "user name"])
        r = try Reference(parsing: "coffer://a%2Fb/x%20y%25?field=f%3Fg%2Fh")
        #expect(r.segments == ["a/b", "x y%"])
        #expect(r.explicitField == "f?g/h")
        #expect(r.splitReading == nil)
        r = try Reference(parsing: "coffer://caf%C3%A9/ключ")
        #expect(r.segments == ["café", "ключ"])
    }

    @Test func rejectsMalformedReferences() {
        for bad in [
            "", "coffer:/x", "Coffer://x", "coffer://", "coffer:///x", "coffer://x/", "coffer://a//b", "coffer://a%2", "coffer://a%zz",
            "coffer://a%FF", "coffer://a%0A", "coffer://a\tb", "coffer://a#b", "coffer://a?x=1", "coffer://a?field=", "coffer://a?field=b?c",
            "coffer://?field=x",
        ] {
            #expect(throws: CofferError.self, "\(bad)") { try Reference(parsing: bad) }
            if let e = try? #require(throws: CofferError.self, performing: { try Reference(parsing: bad) }) {
                #expect(e.kind == .badData && e.exitCode == 65)
            }
        }
    }

    @Test func encodedReferencesParseBack() throws {
        let cases: [(String, String?)] = [
            ("work/openai", "key"), ("my stuff/db one", nil), ("a/b", "x/y"), ("p%c?t#h", "f&g=h}"), ("{{x}}", "%"),
        ]
        for (item, field) in cases {
            let built = Reference(item: item, field: field)
            let back = try Reference(parsing: built.text)
            #expect(back.wholeName == item, "\(built.text)")
            #expect(back.explicitField == field, "\(built.text)")
        }
        #expect(Reference(item: "work/openai", field: "key").text == "coffer://work/openai?field=key")
        #expect(Reference(item: "a b/c", field: nil).text == "coffer://a b/c")
    }

    @Test func resolvesByTheDocumentedRule() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "work/openai", type: .apiKey, fields: [Field(name: "key", value: "sk-1", isSecret: true)]))
        try v.add(
            ItemDraft(
                name: "a/b", type: .custom, fields: [Field(name: "c", value: "field-c", isSecret: false), Field(name: "d", value: "field-d", isSecret: true)]))
        try v.add(ItemDraft(name: "a/b/c", type: .apiKey, fields: [Field(name: "key", value: "item-abc", isSecret: true)]))
        try v.add(ItemDraft(name: "empty", type: .custom))
        var resolver = ReferenceResolver(vault: v)
        func value(_ text: String) throws -> String { try resolver.resolve(try Reference(parsing: text)).value }
        #expect(try value("coffer://work/openai") == "sk-1")
        #expect(try value("coffer://work/openai/key") == "sk-1")
        #expect(try value("coffer://a/b") == "field-d") // custom: first secret field
        #expect(try value("coffer://a/b/d") == "field-d")
        #expect(try value("coffer://a/b?field=c") == "field-c")
        #expect(try value("coffer://a/b/c?field=key") == "item-abc")
        let resolved = try resolver.resolve(try Reference(parsing: "coffer://a/b/d"))
        #expect(resolved.item == "a/b" && resolved.field == "d" && resolved.isSecret)

        func kind(_ text: String) -> CofferError.Kind? {
            do {
                _ = try value(text)
                return nil
            } catch let e as CofferError { return e.kind } catch { return nil }
        }
        #expect(kind("coffer://a/b/c") == .ambiguousName) // item a/b/c and field c of a/b
        #expect(kind("coffer://work/openai/nope") == .itemNotFound)
        #expect(kind("coffer://nope") == .itemNotFound)
        #expect(kind("coffer://nope/deeper/x") == .itemNotFound)
        #expect(kind("coffer://work/openai?field=nope") == .itemNotFound)
        #expect(kind("coffer://empty") == .itemNotFound)
        #expect(kind("coffer://id:zz/x") == .itemNotFound)
        #expect(try v.resolve(reference: "coffer://work/openai").value == "sk-1")
        let id = try v.item(named: "work/openai").id.hex
        #expect(try value("coffer://id:\(id.prefix(8))/key") == "sk-1")
    }

    @Test func resolverLooksUpEachNameOnce() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(ItemDraft(name: "x/y", type: .apiKey, fields: [Field(name: "key", value: "k", isSecret: true)]))
        var lookups: [String] = []
        var resolver = ReferenceResolver { (name: String) throws(CofferError) -> Item? in
            lookups.append(name)
            return try? v.item(named: name)
        }
        for _ in 0..<3 { _ = try resolver.resolve(try Reference(parsing: "coffer://x/y/key")) }
        #expect(lookups == ["x/y/key", "x/y"])
    }
}

@Suite("stream masking")
struct StreamMaskerTests {
    func masked(_ input: String, _ secrets: [String], chunks: [Int]) -> String {
        var m = StreamMasker(secrets: secrets)
        var out: [UInt8] = []
        var bytes = ArraySlice(Array(input.utf8))
        var i = 0
        while !bytes.isEmpty {
            let n = max(1, min(chunks[i % chunks.count], bytes.count))
            out += m.feed(bytes.prefix(n))
            bytes = bytes.dropFirst(n)
            i += 1
        }
        out += m.finish()
        return String(decoding: out, as: UTF8.self)
    }

    @Test func replacesWholeAndSplitSecrets() {
        #expect(masked("a sk-123 b sk-123", ["sk-123"], chunks: [100]) == "a <concealed> b <concealed>")
        for size in 1...8 {
            #expect(masked("a sk-123 b sk-12 c", ["sk-123"], chunks: [size]) == "a <concealed> b sk-12 c")
        }
        // The longer of two overlapping secrets wins, also when split.
        #expect(masked("xabcdefx abcx", ["abc", "abcdef"], chunks: [4]) == "x<concealed>x <concealed>x")
        #expect(masked("abcdef", ["abc", "abcdef"], chunks: [3]) == "<concealed>")
        #expect(masked("aaab", ["aab"], chunks: [1]) == "a<concealed>")
        #expect(masked("nothing here", [], chunks: [3]) == "nothing here")
        #expect(masked("ключ=секрет;", ["секрет"], chunks: [1]) == "ключ=<concealed>;")
    }

    @Test func holdsBackOnlyPossiblePrefixes() {
        var m = StreamMasker(secrets: ["secret"])
        #expect(m.feed(Array("hello sec".utf8)) == Array("hello ".utf8))
        #expect(m.feed(Array("ond".utf8)) == Array("second".utf8))
        #expect(m.feed(Array("se".utf8)).isEmpty)
        #expect(m.finish() == Array("se".utf8))
    }

    @Test func randomChunkingNeverLeaksASecret() {
        var rng = SystemRandomNumberGenerator()
        let secrets = ["tok-AbC123", "AbC", "pass word", "zz"]
        let alphabet = Array("tok-AbC123 pass wordzZ\n")
        for _ in 0..<300 {
            var text = ""
            for _ in 0..<Int.random(in: 0...60, using: &rng) {
                if Int.random(in: 0..<5, using: &rng) == 0 {
                    text += secrets.randomElement(using: &rng)!
                } else {
                    text.append(alphabet.randomElement(using: &rng)!)
                }
            }
            let whole = masked(text, secrets, chunks: [Int.max])
            let chunks = (0..<5).map { _ in Int.random(in: 1...7, using: &rng) }
            #expect(masked(text, secrets, chunks: chunks) == whole, "\(text) \(chunks)")
            for s in secrets { #expect(!whole.contains(s), "\(text) -> \(whole)") }
        }
    }
}

@Suite("dotenv, env naming, templates")
struct ProgramsFormatTests {
    @Test func dotenvParses() throws {
        let text = """
            # comment

            A=plain
            export B = spaced value # a comment
            C='single $X "q"'
            D="dq \\"x\\" \\n \\$HOME \\\\ end" # c
            E=
            F=coffer://work/openai
            G=a#b
            """
        let e = try Dotenv.parse(text, source: "t.env")
        #expect(e.map(\.name) == ["A", "B", "C", "D", "E", "F", "G"])
        #expect(e.map(\.value) == ["plain", "spaced value", "single $X \"q\"", "dq \"x\" \n $HOME \\ end", "", "coffer://work/openai", "a#b"])
        #expect(e[0].line == 3)
        for bad in ["NOEQUALS", "1X=a", "A B=c", "X='open", "X=\"open", "X='a' tail"] {
            #expect(throws: CofferError.self, "\(bad)") { try Dotenv.parse(bad, source: "t.env") }
        }
    }

    @Test func dotenvQuotedValuesSpanLines() throws {
        let text = "A='line one\nline two'\nB=\"x\ny \\\" z\nw\" # after\nC=plain\r\nD=\"\n\"\n"
        let e = try Dotenv.parse(text, source: "t.env")
        #expect(e.map(\.name) == ["A", "B", "C", "D"])
        #expect(e.map(\.value) == ["line one\nline two", "x\ny \" z\nw", "plain", "\n"])
        #expect(e.map(\.line) == [1, 3, 6, 7])
        // Unclosed to the end of the file: named at the line it opened on.
        do {
            _ = try Dotenv.parse("A=1\nB='open\nmore\n", source: "t.env")
            Issue.record("an unterminated quote was accepted")
        } catch {
            #expect(error.message == "t.env:2: unterminated single quote", "\(error.message)")
        }
    }

    @Test func dotenvLinesReadBack() throws {
        for value in ["plain", "", "two words", "it's", "a\nb", "$HOME", "\"q\" \\ `x`", "tab\there", "#x", "ключ"] {
            let line = Dotenv.line(name: "V", value: value)
            let back = try Dotenv.parse(line, source: "x")
            #expect(back.count == 1 && back[0].value == value, "\(line)")
        }
        #expect(Dotenv.shellLine(name: "V", value: "it's") == "export V='it'\\''s'")
    }

    @Test func defaultVariableNames() {
        #expect(EnvNaming.defaultName(item: "work/openai", field: "key") == "OPENAI_KEY")
        #expect(EnvNaming.defaultName(item: "db/prod-pg", field: "password") == "PROD_PG_PASSWORD")
        #expect(EnvNaming.defaultName(item: "my stuff/db one", field: "user name") == "DB_ONE_USER_NAME")
        #expect(EnvNaming.defaultName(item: "3scale", field: "key") == "_3SCALE_KEY")
        #expect(EnvNaming.defaultName(item: "ключ", field: "key") == "KEY")
        #expect(EnvNaming.defaultName(item: "x", field: "--") == "X")
        #expect(EnvNaming.isValidOverride("OPENAI_API_KEY") && EnvNaming.isValidOverride("-"))
        #expect(!EnvNaming.isValidOverride("1A") && !EnvNaming.isValidOverride("A-B") && !EnvNaming.isValidOverride(""))
    }

    @Test func templatesFindPlaceholders() throws {
        let t = try Template(parsing: "a {{ coffer://x/y }} b {{coffer://my item/f}}{{ .Go }} {{", source: "t")
        #expect(t.references.map(\.text) == ["coffer://x/y", "coffer://my item/f"])
        #expect(t.pieces.first == .text("a "))
        #expect(t.pieces.last == .text("{{ .Go }} {{"))
        #expect(throws: CofferError.self) { try Template(parsing: "x\n{{ coffer://a\n}}", source: "t") }
        #expect(throws: CofferError.self) { try Template(parsing: "{{ coffer://a%z }}", source: "t") }
        let plain = try Template(parsing: "no refs", source: "t")
        #expect(plain.references.isEmpty && plain.render([:]) == "no refs")
    }
}
