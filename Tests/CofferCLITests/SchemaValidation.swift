import CofferTestSupport
import Foundation
import Testing

/// Validates JSON text against a schema in Schemas/ with Python's
/// `jsonschema` (installed by `make deps`).
enum SchemaValidation {
    static let schemasDir = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Schemas")

    static let python: String? = {
        for candidate in ["/usr/bin/python3", "/usr/local/bin/python3"] + pathCandidates() {
            let r = Spawn.run(
                "/usr/bin/env", [candidate, "-c", "import jsonschema"], stdin: nil, fd3: nil,
                environment: ProcessInfo.processInfo.environment, workDir: "/")
            if r.status == 0 { return candidate }
        }
        return nil
    }()

    static func pathCandidates() -> [String] {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
            .filter { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        errors = sorted(v.iter_errors(json.load(sys.stdin)), key=lambda e: list(e.path))
        for e in errors:
            print("/".join(map(str, e.path)) + ": " + e.message)
        sys.exit(1 if errors else 0)
        """

    /// Records an issue (with every violation) unless `json` conforms to
    /// Schemas/`schema`.
    static func expectValid(_ json: String, schema: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let python else {
            Issue.record("python3 with jsonschema is not installed; run `make deps`", sourceLocation: sourceLocation)
            return
        }
        let path = schemasDir.appendingPathComponent(schema).path
        let r = Spawn.run(
            "/usr/bin/env", [python, "-c", script, path], stdin: json, fd3: nil,
            environment: ProcessInfo.processInfo.environment, workDir: "/")
        #expect(r.status == 0, "JSON does not match \(schema):\n\(r.stdout)\(r.stderr)\n\(json)", sourceLocation: sourceLocation)
    }
}
