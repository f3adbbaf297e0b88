import CofferCrypto
import CofferSystem
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

#if canImport(Glibc)
import Glibc
#endif

/// Regression tests for review findings: CRLF input, invalid variable
/// names in env output, credential store/retrieve agreement, writing
/// through symbolic links.
@Suite("Review fixes (library)")
struct ReviewFixesKitTests {
    // MARK: (A) CRLF line ends

    @Test func dotenvReadsCRLFLines() throws {
        let entries = try Dotenv.parse("A=1\r\nB=coffer://work/openai\r\n# note\r\nC='x y'\r\n", source: "e")
        #expect(entries.map(\.name) == ["A", "B", "C"])
        #expect(entries.map(\.value) == ["1", "coffer://work/openai", "x y"])
        #expect(entries.map(\.line) == [1, 2, 4])
        // A bad line is reported on its own line number.
        #expect(throws: CofferError.self) { try Dotenv.parse("A=1\r\nNOT A LINE\r\n", source: "e") }
        do {
            _ = try Dotenv.parse("A=1\r\nNOT A LINE\r\n", source: "e")
        } catch {
            #expect(error.message.hasPrefix("e:2:"), "\(error.message)")
        }
    }

    @Test func configReadsCRLFLines() throws {
        let config = try CofferConfig.parse("session.timeout = 15m\r\nsession.max-lifetime = 2h\r\n")
        #expect(config.sessionTimeout == 900)
        #expect(config.sessionMaxLifetime == 7200)
    }

    @Test func templateCountsCRLFLinesAndKeepsPlaceholdersOnOneLine() throws {
        let t = try Template(parsing: "a\r\n{{ coffer://work/openai }}\r\nb\r\n", source: "t")
        #expect(t.references.count == 1)
        #expect(t.pieces.first == .text("a\r\n"))
        #expect(t.pieces.last == .text("\r\nb\r\n"))
        do {
            _ = try Template(parsing: "x\r\ny\r\n{{ coffer://work/openai\r\n}}\r\n", source: "t")
            Issue.record("a placeholder split over two CRLF lines was accepted")
        } catch {
            #expect(error.message.hasPrefix("t:3:"), "\(error.message)")
            #expect(error.message.contains("without a closing"), "\(error.message)")
        }
    }

    // MARK: (B) invalid names never reach dotenv or shell output

    @Test func envOutputNeverWritesAnInvalidName() throws {
        for bad in ["A=1; touch /tmp/x; B", "A B", "1A", "", "A\nB", "$(id)", "É"] {
            #expect(Dotenv.shellLine(name: bad, value: "v") == Dotenv.skippedLine)
            #expect(Dotenv.line(name: bad, value: "v") == Dotenv.skippedLine)
        }
        // The skipped line is a comment in both formats.
        #expect(try Dotenv.parse(Dotenv.skippedLine + "\n", source: "e").isEmpty)
        #expect(Dotenv.shellLine(name: "OK_1", value: "v") == "export OK_1='v'")
        #expect(Dotenv.line(name: "_ok", value: "v") == "_ok=v")
    }

    // MARK: (D) store writes where retrieve reads

    @Test func storeWritesTheItemRetrievePicks() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        // An older unexpired item and a newer expired one: lookups prefer
        // the unexpired one, so store must write there.
        try vault.add(ItemDraft(name: "ads/old", type: .apiKey, fields: [Field(name: "key", value: "old-key-0123456789abcdef", isSecret: true)], source: "ads"))
        try vault.add(ItemDraft(
            name: "ads/new", type: .apiKey, fields: [Field(name: "key", value: "new-key-0123456789abcdef", isSecret: true)], source: "ads",
            expires: Day.today.adding(days: -10)))
        let m = CredentialManager(vault: vault)
        let stored = "stored-key-0123456789abcdef"
        try await m.store(apiKey: stored, for: "ads")
        #expect(try await m.retrieve(for: "ads", type: .apiKey) == stored)
        #expect(try vault.item(named: "ads/old").field("key")?.value == stored)
        #expect(try vault.item(named: "ads/new").field("key")?.value == "new-key-0123456789abcdef")
        let status = try vault.status(of: SourceRequirement(id: "ads", type: .apiKey))
        #expect(status.items == ["ads/old"])
        #expect(try vault.list().count == 2)
    }

    @Test func apiKeyWithEmailRetrieveReadsTheItemStoreWrote() async throws {
        let vaultBox = try TemporaryVault()
        let vault = vaultBox.vault
        try vault.add(ItemDraft(name: "ent/lone", type: .apiKey, fields: [Field(name: "key", value: "lone-key-0123456789", isSecret: true)], source: "ent"))
        let m = CredentialManager(vault: vault)
        try await m.store(apiKey: "pair-key-0123456789", email: "ops@example.org", for: "ent")
        #expect(try await m.retrieve(for: "ent", type: .apiKeyWithEmail) == "pair-key-0123456789")
        #expect(try await m.retrieve(for: "ent", type: .email) == "ops@example.org")
        let status = try vault.status(of: SourceRequirement(id: "ent", type: .apiKeyWithEmail))
        #expect(status.items == ["ent/api-key-with-email"])
    }

    // MARK: (E) atomic writes go through symbolic links

    static func tempDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-atomic-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func isSymlink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK
    }

    @Test func atomicWriteFollowsASymlink() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "old".write(toFile: dir + "/real.txt", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "real.txt")
        try AtomicFile.writeAtomically(Data("new".utf8), to: dir + "/link")
        #expect(Self.isSymlink(dir + "/link"))
        #expect(try String(contentsOfFile: dir + "/real.txt", encoding: .utf8) == "new")

        // A dangling link names the file to create, in the link's folder's terms.
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/dangling", withDestinationPath: "sub/created.txt")
        try AtomicFile.writeAtomically(Data("made".utf8), to: dir + "/dangling")
        #expect(Self.isSymlink(dir + "/dangling"))
        #expect(try String(contentsOfFile: dir + "/sub/created.txt", encoding: .utf8) == "made")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["dangling", "link", "real.txt", "sub"])
    }

    @Test func atomicWriteStreamsToFIFOsAndRefusesFolders() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/to-fifo", withDestinationPath: "fifo")
        // A FIFO (directly or through a link) is written as a stream
        // (issue 15): a reader gets the bytes, the FIFO stays.
        for target in ["fifo", "to-fifo"] {
            let reader = open(dir + "/fifo", O_RDONLY | O_NONBLOCK)
            #expect(reader >= 0)
            try AtomicFile.writeAtomically(Data("x".utf8), to: dir + "/" + target)
            var byte: UInt8 = 0
            #expect(read(reader, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
            close(reader)
        }
        do {
            try AtomicFile.writeAtomically(Data("x".utf8), to: dir + "/folder")
            Issue.record("writing over a folder was accepted")
        } catch {
            let e = CofferError(error)
            #expect(e.kind == .cannotCreate && e.exitCode == 73)
            #expect(error.message.contains("is a folder"), "\(error.message)")
        }
        #expect(Self.isSymlink(dir + "/to-fifo"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["fifo", "folder", "to-fifo"])
    }
}
