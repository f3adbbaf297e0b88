import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

@Suite("Password strength estimate")
struct PasswordStrengthTests {
    @Test func commonPasswordWithDecorationsIsWeak() {
        let e = PasswordStrength.estimate("Password1!")
        #expect(e.bits < 20, "\(e.bits)")
        #expect(e.isWeak)
        #expect(e.patterns.first?.pattern == .commonPassword)
        #expect(e.reason == "built from a common password and 2 other characters")
    }

    @Test(arguments: [
        ("qwertyuiop", PasswordStrength.Pattern.commonPassword),
        ("zxcvbnmasdf", .commonPassword),
        ("ujmnhytgbvfr", .keyboardWalk),
        ("hjkl;'", .keyboardWalk),
        ("aaaaaaaaaaaa", .repeated),
        ("xQ3xQ3xQ3xQ3", .repeated),
        ("abcdefghij", .sequence),
        ("9876543210", .sequence),
        ("19840512", .date),
        ("12/05/1984", .date),
        ("monkeyelephant", .commonPassword),
        ("p4$$w0rd", .commonPassword),
        ("Jennifer", .name),
    ])
    func patternsAreFoundAndCheap(password: String, pattern: PasswordStrength.Pattern) {
        let e = PasswordStrength.estimate(password)
        #expect(e.patterns.contains { $0.pattern == pattern }, "\(password): \(e.patterns)")
        #expect(e.isWeak, "\(password): \(e.bits) bits")
        // Far below what the length and character classes alone would give.
        let naive = password.unicodeScalars.reduce(0) { $0 + PasswordStrength.characterBits($1) }
        #expect(e.bits < naive * 0.6, "\(password): \(e.bits) of \(naive)")
    }

    @Test func randomSecretsAreStrong() {
        // 24 characters from 62: about 143 bits if random.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for _ in 0..<50 {
            let s = String((0..<24).map { _ in alphabet[Int(Random.uniform(UInt32(alphabet.count)))] })
            let e = PasswordStrength.estimate(s)
            #expect(!e.isWeak && e.bits > 80, "\(e.bits)")
        }
        let key = "sk-proj-" + String(repeating: "x", count: 0) + "T3BlbkFJq8Zr2vW9mX4nL7pK1sD6fH0gJ"
        #expect(PasswordStrength.estimate(key).bits > 100)
    }

    @Test func shortRandomIsWeakLongerPassphraseIsNot() {
        #expect(PasswordStrength.estimate("x7#Kq").isWeak)
        #expect(PasswordStrength.estimate("x7#Kq").reason == "5 random-looking characters")
        let words = PasswordStrength.estimate("correct horse battery staple")
        #expect(words.patterns.contains { $0.pattern == .dictionaryWord })
        #expect(words.bits > 40 && words.bits < 80, "\(words.bits)")
        #expect(PasswordStrength.estimate("").bits == 0)
        #expect(PasswordStrength.estimate("").reason == "empty")
    }

    @Test func moreDecorationCostsMoreButStaysWeak() {
        let a = PasswordStrength.estimate("password").bits
        let b = PasswordStrength.estimate("Password").bits
        let c = PasswordStrength.estimate("Password1").bits
        #expect(a < b && b < c)
        #expect(c < PasswordStrength.weakThreshold)
    }

    @Test func reasonNeverContainsThePassword() {
        for p in ["Password1!", "qwerty123", "hunter2hunter2", "1984-05-12dragon", "ZZZZZZZZ"] {
            let e = PasswordStrength.estimate(p)
            for token in ["ssword1", "qwerty", "hunter", "dragon", "1984", "ZZZ"] {
                #expect(!e.reason.lowercased().contains(token.lowercased()), "\(p): \(e.reason)")
            }
        }
    }

    @Test func hostileInputIsBoundedAndNeverTraps() {
        let long = String(repeating: "ab1!", count: 5000)
        let e = PasswordStrength.estimate(long)
        #expect(e.length == 20000)
        #expect(e.bits > 0)
        for odd in ["\u{0}\u{0}\u{0}", "🔑🔑🔑🔑", "é́́́", "\r\n\t", String(repeating: "9", count: 300), "٣٤٥٦٧٨"] {
            _ = PasswordStrength.estimate(odd)
        }
        // A unicode password is not penalised as if it were ASCII words.
        #expect(PasswordStrength.estimate("日本語のパスワードです").bits > 50)
    }
}

/// A small HIBP file in the downloader's format, sorted by hash.
func makeHIBPFile(passwords: [(String, Int)], filler: Int = 500, crlf: Bool = true, in dir: URL) throws -> String {
    var lines: [(String, Int)] = passwords.map { (hex(BreachLookup.sha1($0.0)), $0.1) }
    for i in 0..<filler { lines.append((hex(BreachLookup.sha1("filler-\(i)")), i + 1)) }
    lines.sort { $0.0 < $1.0 }
    let text = lines.map { "\($0.0):\($0.1)" }.joined(separator: crlf ? "\r\n" : "\n") + (crlf ? "\r\n" : "\n")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let path = dir.appendingPathComponent("pwned-\(UUID().uuidString.prefix(6)).txt").path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

@Suite("HIBP file lookups")
struct HIBPFileTests {
    let folder = TemporaryDirectory(prefix: "coffer-hibp")
    var dir: URL { folder.url }

    @Test func findsEveryListedHashAndNoOther() throws {
        for crlf in [true, false] {
            let path = try makeHIBPFile(passwords: [("Password1!", 123_456), ("hunter2", 17)], crlf: crlf, in: dir)
            let f = try HIBPFile(path: path)
            #expect(try f.count(sha1: BreachLookup.sha1("Password1!")) == 123_456)
            #expect(try f.count(sha1: BreachLookup.sha1("hunter2")) == 17)
            #expect(try f.count(sha1: BreachLookup.sha1("not in the file")) == 0)
            for i in stride(from: 0, to: 500, by: 37) {
                #expect(try f.count(sha1: BreachLookup.sha1("filler-\(i)")) == i + 1)
            }
            // The very first and last hashes, and ones outside their range.
            #expect(try f.count(sha1: [UInt8](repeating: 0, count: 20)) == 0)
            #expect(try f.count(sha1: [UInt8](repeating: 0xFF, count: 20)) == 0)
        }
    }

    @Test func sha1MatchesTheKnownHIBPValue() {
        // "password" is 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8 in HIBP.
        #expect(hex(BreachLookup.sha1("password")) == "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8")
    }

    @Test func missingEmptyAndMalformedFilesAreClearErrors() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        func failure(_ path: String) -> CofferError? {
            do {
                _ = try HIBPFile(path: path)
                return nil
            } catch { return error }
        }
        #expect(failure(dir.appendingPathComponent("nope.txt").path)?.exitCode == 66)
        #expect(failure(dir.path)?.exitCode == 66)
        let empty = dir.appendingPathComponent("empty.txt").path
        FileManager.default.createFile(atPath: empty, contents: Data())
        #expect(failure(empty)?.kind == .badData)
        let ntlm = dir.appendingPathComponent("ntlm.txt").path
        FileManager.default.createFile(atPath: ntlm, contents: Data("8846F7EAEE8FB117AD06BDD830B7586C:10\r\n".utf8))
        let e = failure(ntlm)
        #expect(e?.exitCode == 65)
        #expect(e?.message.contains("NTLM") == true, "\(String(describing: e))")
        let text = dir.appendingPathComponent("text.txt").path
        FileManager.default.createFile(atPath: text, contents: Data("hello world, this is not a hash list at all\n".utf8))
        #expect(failure(text)?.exitCode == 65)
    }

    @Test func corruptionFoundDuringASearchIsReportedNotMisread() throws {
        // Valid first line, garbage later: a search that reaches it fails.
        var text = hex(BreachLookup.sha1("a")) + ":1\n"
        text += String(repeating: "x", count: 4000) + "\n"
        let path = dir.appendingPathComponent("garbage.txt").path
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let f = try HIBPFile(path: path)
        #expect(throws: CofferError.self) { try f.count(sha1: [UInt8](repeating: 0xFF, count: 20)) }

        // Unsorted: detected as out of order, not answered wrongly.
        var lines = (0..<200).map { hex(BreachLookup.sha1("u\($0)")) + ":\($0 + 1)" }.sorted()
        lines.reverse()
        let unsorted = dir.appendingPathComponent("unsorted.txt").path
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: unsorted))
        let u = try HIBPFile(path: unsorted)
        var failures = 0
        for i in 0..<200 {
            do { _ = try u.count(sha1: BreachLookup.sha1("u\(i)")) } catch {
                #expect(error.message.contains("not sorted"))
                failures += 1
            }
        }
        #expect(failures > 150)
    }
}

@Suite("Vault audit")
struct VaultAuditTests {
    func login(_ name: String, _ password: String, expires: Day? = nil) -> ItemDraft {
        ItemDraft(
            name: name, type: .login,
            fields: [
                Field(name: "username", value: "me", isSecret: false), Field(name: "password", value: password, isSecret: true),
                Field(name: "url", value: "https://example.com", isSecret: false),
            ], expires: expires)
    }

    @Test func findsEachIssueAndNamesOnlyItems() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        let strong = "Vq8#mZ2!rT6@kW4$pL9^"
        try v.add([
            login("web/weak", "Password1!"),
            login("web/a", "J7d-Rk2p-Xm9q-Lt4w"), login("web/b", "J7d-Rk2p-Xm9q-Lt4w"),
            login("web/strong", strong, expires: Day.today.adding(days: -3)),
            login("web/soon", "Zr8#Wq3!Mt6@Kp1$Ln", expires: Day.today.adding(days: 10)),
            ItemDraft(name: "notes/n", type: .note, fields: [Field(name: "notes", value: "hi", isSecret: true)]),
            ItemDraft(name: "api/k", type: .apiKey, fields: [Field(name: "key", value: "J7d-Rk2p-Xm9q-Lt4w", isSecret: true)]),
        ])
        var o = AuditOptions()
        let hibpFolder = TemporaryDirectory(prefix: "coffer-hibp")
        o.breachSource = try HIBPFile(path: makeHIBPFile(passwords: [("Password1!", 9999)], in: hibpFolder.url))
        let r = try v.audit(o)
        #expect(r.itemsAudited == 7)
        #expect(r.secretsAudited == 6) // the note is not audited
        #expect(r.findings.filter { $0.issue == .weak }.map(\.item) == ["web/weak"])
        #expect(
            r.reusedGroups == [
                [AuditSecret(item: "api/k", field: "key"), AuditSecret(item: "web/a", field: "password"), AuditSecret(item: "web/b", field: "password")]
            ])
        #expect(r.count(of: .reused) == 3)
        #expect(r.findings.filter { $0.issue == .expired }.map(\.item) == ["web/strong"])
        #expect(r.findings.first { $0.issue == .expired }?.days == 3)
        #expect(r.findings.filter { $0.issue == .expiring }.map(\.item) == ["web/soon"])
        #expect(r.findings.first { $0.issue == .expiring }?.days == 10)
        #expect(r.findings.filter { $0.issue == .breached }.map(\.item) == ["web/weak"])
        #expect(r.findings.first { $0.issue == .breached }?.breachCount == 9999)
        #expect(r.count(of: .old) == 0)
        for f in r.findings {
            for secret in ["Password1!", "J7d-Rk2p", strong] { #expect(!f.detail.contains(secret)) }
        }
        #expect(r.contains(any: [.weak]) && !r.contains(any: [.old]))

        // Expiring only within the chosen span.
        o.expiringWithinDays = 5
        #expect(try v.audit(o).count(of: .expiring) == 0)
    }

    @Test func oldSecretsCountFromTheirWriteTime() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add(login("old/one", "Zr8#Wq3!Mt6@Kp1$Ln"))
        var o = AuditOptions()
        o.now = Date().addingTimeInterval(400 * 86400)
        let r = try v.audit(o)
        #expect(r.findings.map(\.issue) == [.old])
        #expect(r.findings.first?.days == 400 || r.findings.first?.days == 399)
        // A new value resets the age.
        var e = ItemEdit()
        e.setFields = [Field(name: "password", value: "Qm4!Tz8@Lx2#Wn6$Rb", isSecret: true)]
        try v.edit("old/one", e)
        o.now = Date().addingTimeInterval(100 * 86400)
        #expect(try v.audit(o).findings.isEmpty)
        o.olderThanDays = 30
        #expect(try v.audit(o).findings.map(\.issue) == [.old])
    }

    @Test func prefixSelectsAPathButReuseLooksEverywhere() throws {
        let vBox = try TemporaryVault()
        let v = vBox.vault
        try v.add([login("work/a", "J7d-Rk2p-Xm9q-Lt4w"), login("workshop/b", "Password1!"), login("home/c", "J7d-Rk2p-Xm9q-Lt4w")])
        var o = AuditOptions()
        o.namePrefix = "work"
        let r = try v.audit(o)
        #expect(r.itemsAudited == 1)
        #expect(r.findings.map(\.item) == ["work/a"])
        #expect(r.findings.first?.issue == .reused)
        #expect(r.findings.first?.detail == "same value as home/c (password)")
    }
}
