import CofferTestSupport
import Foundation
import Testing

/// scripts/check-layers.sh, run on a copy of the sources: passes on the
/// tree as it is and fails, naming file and line, on CofferKit text that
/// names a `coffer` command or a command-line option, holds SQL or
/// imports GRDB (CofferStore's), or when an API test imports more than an
/// application could.
@Suite("layer rules (scripts/check-layers.sh)")
struct LayerRulesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A copy of the script and the folders it reads.
    static func copy() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory(prefix: "coffer-layers")
        let fm = FileManager.default
        for folder in ["scripts", "Sources/CofferKit", "Sources/coffer", "Tests/CofferKitAPITests", "Tests/CofferTestSupport"] {
            try fm.createDirectory(atPath: dir.path((folder as NSString).deletingLastPathComponent), withIntermediateDirectories: true)
            try fm.copyItem(atPath: root.appendingPathComponent(folder).path, toPath: dir.path(folder))
        }
        return dir
    }

    static func check(_ dir: TemporaryDirectory) -> CLIResult {
        Spawn.run("/bin/bash", [dir.path("scripts/check-layers.sh")], stdin: nil, fd3: nil, environment: ["PATH": "/usr/bin:/bin"], workDir: dir.url.path)
    }

    @Test func cliWordsInCofferKitFailTheCheck() throws {
        let dir = try Self.copy()
        let clean = Self.check(dir)
        #expect(clean.status == 0 && clean.stderr.isEmpty, "\(clean)")

        try """
        // list items with `coffer ls` (a comment: allowed)
        /// pass --vault PATH (a documentation comment: allowed)
        let a = CofferError(.usage, "no", hint: "list items with `coffer ls`")
        let b = CofferError(.usage, "no", hint: "pass --vault PATH")
        let c = ["rev-parse", "--short"]
        let d = "then run coffer verify"
        let e = "another coffer is writing"

        """.write(toFile: dir.path("Sources/CofferKit/Violation.swift"), atomically: true, encoding: .utf8)
        let r = Self.check(dir)
        #expect(r.status == 1, "\(r)")
        let flagged = r.stderr.split(separator: "\n").filter { $0.contains("Violation.swift") }.map { $0.split(separator: ":")[2] }
        #expect(flagged == ["3", "4", "6"], "\(r.stderr)")
        #expect(r.stderr.contains("check-layers: Sources/CofferKit/Violation.swift:3: CofferKit text names a coffer command"), "\(r.stderr)")
        #expect(r.stderr.contains("check-layers: Sources/CofferKit/Violation.swift:4: CofferKit text names a command-line option"), "\(r.stderr)")
    }

    @Test(arguments: [
        ("Sources/CofferKit/Violation.swift", "import GRDB", "Violation.swift:1: CofferKit must not import GRDB"),
        ("Sources/CofferKit/Violation.swift", "import ArgumentParser", "Violation.swift:1: CofferKit must not import ArgumentParser"),
        ("Sources/CofferKit/Violation.swift", "let q = \"SELECT itemId FROM item\"", "Violation.swift:1: CofferKit must not hold SQL"),
        ("Sources/CofferKit/Violation.swift", "    try run(\"PRAGMA cache_size = -2000\")", "Violation.swift:1: CofferKit must not hold SQL"),
        (
            "Sources/coffer/Violation.swift", "        throw ValidationError(\"no\")",
            "Violation.swift:1: throw CofferError(.usage, …) with a hint, not ValidationError"
        ),
        ("Tests/CofferKitAPITests/Violation.swift", "import CofferStore", "Violation.swift:1: CofferKitAPITests may import only"),
        ("Tests/CofferKitAPITests/Violation.swift", "@testable import CofferKit", "Violation.swift:1: CofferKitAPITests may import only"),
    ])
    func lowerLayersInCofferKitFailTheCheck(file: String, line: String, expected: String) throws {
        let dir = try Self.copy()
        try (line + "\n").write(toFile: dir.path(file), atomically: true, encoding: .utf8)
        let r = Self.check(dir)
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.contains(expected), "\(r.stderr)")
    }

    @Test func sqlQuotedInACommentPasses() throws {
        let dir = try Self.copy()
        try "// the query is `SELECT itemId FROM item` (in CofferStore)\n/// \"DELETE FROM item\" is CofferStore's\n"
            .write(toFile: dir.path("Sources/CofferKit/Violation.swift"), atomically: true, encoding: .utf8)
        let r = Self.check(dir)
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)")
    }
}
