import ArgumentParser
import CofferKit
import Foundation

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Report which sources of a requirements manifest have a usable credential.",
        discussion: """
            Each source is ready, missing, invalid (fails its format rule) or expired. Without \
            --requirements, checks every manifest registered with `coffer requirements add`. \
            Exit status: 0 when every required source is ready (with --all: every source), \
            1 when one is not, 64-77 for errors as everywhere (`coffer help requirements`).
              coffer check --requirements app-requirements.json || echo "keys missing"
            """)

    /// Exit status when the vault is fine but a required source is not ready.
    static let notReadyExitCode: Int32 = 1

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("Requirements manifest (JSON, `coffer help requirements`).", valueName: "file"))
    var requirements: String?

    @Flag(help: "Treat optional sources as required for the exit status.")
    var all = false

    @Flag(help: "Print JSON (Schemas/check.schema.json).")
    var json = false

    func run() throws {
        var manifests: [(label: String, manifest: RequirementsManifest)] = []
        if let requirements {
            manifests.append((requirements, try RequirementsManifest.load(path: requirements)))
        }
        let vault = try options.unlock()
        if requirements == nil {
            for r in try vault.registeredRequirements() {
                if let m = r.manifest {
                    manifests.append(("registered:" + r.name, m))
                } else {
                    Output.warn("skipping registered manifest '\(r.name)': \(r.problem ?? "unreadable")")
                }
            }
            guard !manifests.isEmpty else {
                throw CofferError(
                    .usage, "no requirements manifest to check", hint: "pass --requirements FILE, or register one with `coffer requirements add FILE`")
            }
        }
        var rows: [(manifest: String, status: SourceStatus)] = []
        var seen = Set<String>()
        for (label, m) in manifests {
            for s in try vault.check(m) where seen.insert(s.requirement.id).inserted {
                rows.append((label, s))
            }
        }
        let blocking = rows.filter { ($0.status.requirement.isRequired || all) && !$0.status.isReady }
        if json {
            try Output.json(CheckJSON(rows: rows, ok: blocking.isEmpty, manifests: manifests.map(\.label)))
        } else {
            let idWidth = min(rows.map(\.status.requirement.id.count).max() ?? 0, 32)
            for (_, s) in rows {
                let r = s.requirement
                var line = s.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0) + " "
                line += r.id.padding(toLength: max(idWidth, r.id.count), withPad: " ", startingAt: 0) + "  "
                line += r.isRequired ? "required" : "optional"
                if r.name != r.id { line += "  \(r.name)" }
                if !s.items.isEmpty { line += "  (" + s.items.joined(separator: ", ") + ")" }
                if s.state == .ready, let e = s.expires { line += "  expires \(e)" }
                Output.out(line)
                if !s.isReady {
                    for p in s.problems { Output.out("         - \(p)") }
                    if s.state == .missing, let url = r.registrationURL { Output.out("         - get one at \(url)") }
                    if !r.unavailableWithout.isEmpty {
                        Output.out("         - unavailable without it: " + r.unavailableWithout.joined(separator: ", "))
                    }
                }
            }
        }
        if !blocking.isEmpty {
            let list = blocking.map { "\($0.status.requirement.id) (\($0.status.state.rawValue))" }.joined(separator: ", ")
            Output.note("\(blocking.count) \(all ? "" : "required ")source\(blocking.count == 1 ? " is" : "s are") not ready: \(list)")
            throw ExitCode(Check.notReadyExitCode)
        }
    }
}

/// `coffer check --json` (Schemas/check.schema.json).
struct CheckJSON: Encodable {
    struct Source: Encodable {
        var id: String
        var name: String
        var type: String
        var required: Bool
        var status: String
        var items: [String]
        @NullEncoded var expires: String?
        var problems: [String]
        @NullEncoded var registrationURL: String?
        @NullEncoded var description: String?
        var unavailableWithout: [String]
        var manifest: String

    }
    var ok: Bool
    var manifests: [String]
    var counts: [String: Int]
    var sources: [Source]

    init(rows: [(manifest: String, status: SourceStatus)], ok: Bool, manifests: [String]) {
        self.ok = ok
        self.manifests = manifests
        var counts: [String: Int] = [:]
        for s in SourceStatus.State.allCases { counts[s.rawValue] = 0 }
        for r in rows { counts[r.status.state.rawValue, default: 0] += 1 }
        self.counts = counts
        sources = rows.map { m, s in
            let r = s.requirement
            return Source(
                id: r.id, name: r.name, type: r.type.rawValue, required: r.isRequired, status: s.state.rawValue,
                items: s.items, expires: s.expires?.description, problems: s.problems, registrationURL: r.registrationURL,
                description: r.description, unavailableWithout: r.unavailableWithout, manifest: m)
        }
    }
}
