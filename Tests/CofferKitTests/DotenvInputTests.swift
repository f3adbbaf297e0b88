import Foundation
import Testing

@testable import CofferKit

/// Text read from files the user writes: CRLF line ends are lines, and a
/// name that is not a variable name never reaches dotenv or shell output.
@Suite("dotenv, config and templates: CRLF line ends and invalid variable names")
struct DotenvInputTests {
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

    // Invalid names never reach dotenv or shell output.

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
}
