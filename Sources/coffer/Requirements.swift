import ArgumentParser
import CofferKit
import Foundation

struct Requirements: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requirements",
        abstract: "Register requirements manifests in the vault (they sync like items).",
        discussion: """
            Registered manifests are stored encrypted in the vault (in the hidden item \
            .coffer/requirements) and travel in bundles. `coffer check` without \
            --requirements and `coffer add/edit --source ID` use the registered manifests.
            """,
        subcommands: [RequirementsAdd.self, RequirementsList.self, RequirementsShow.self, RequirementsRemove.self])
}

struct RequirementsAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Register (or replace) a manifest.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "The manifest file (JSON).")
    var file: String

    @Option(help: "Name to register it under (default: the manifest's name, else the file name without .json).")
    var name: String?

    func run() throws {
        let manifest = try RequirementsManifest.load(path: file)
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CofferError(.fileNotFound, "cannot read \(file)")
        }
        var base = URL(fileURLWithPath: file).lastPathComponent
        if base.hasSuffix(".json") { base = String(base.dropLast(5)) }
        let chosen = name ?? manifest.name ?? base
        let vault = try options.unlock()
        let replaced = try vault.registerRequirements(data, name: chosen, file: file)
        Output.note(
            "\(replaced ? "replaced" : "registered") requirements '\(chosen)' (\(manifest.sources.count) source\(manifest.sources.count == 1 ? "" : "s"))")
    }
}

struct RequirementsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List registered manifests.")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON (Schemas/requirements-list.schema.json).")
    var json = false

    func run() throws {
        let vault = try options.unlock()
        let registered = try vault.registeredRequirements()
        if json {
            try Output.json(
                RequirementsListJSON(
                    manifests: registered.map {
                        .init(name: $0.name, sources: $0.manifest?.sources.map(\.id), problem: $0.problem, updatedAt: $0.updatedAt)
                    }))
            return
        }
        for r in registered {
            if let m = r.manifest {
                Output.out("\(r.name)  \(m.sources.count) source\(m.sources.count == 1 ? "" : "s"): " + m.sources.map(\.id).joined(separator: ", "))
            } else {
                Output.out("\(r.name)  (unreadable: \(r.problem ?? "?"))")
            }
        }
    }
}

struct RequirementsShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print a registered manifest's JSON.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "The manifest's registered name.")
    var name: String

    func run() throws {
        let vault = try options.unlock()
        let text = try vault.registeredRequirementsText(named: name)
        Output.out(text.hasSuffix("\n") ? String(text.dropLast()) : text)
    }
}

struct RequirementsRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Unregister a manifest (the removal syncs).")

    @OptionGroup var options: VaultOptions

    @Argument(help: "The manifest's registered name.")
    var name: String

    func run() throws {
        let vault = try options.unlock()
        try vault.removeRequirements(named: name)
        Output.note("removed requirements '\(name)'")
    }
}

/// `coffer requirements ls --json`.
struct RequirementsListJSON: Encodable {
    struct Entry: Encodable {
        var name: String
        /// Source ids in manifest order; null when the stored manifest is unreadable.
        @NullEncoded var sources: [String]?
        @NullEncoded var problem: String?
        var updatedAt: Date

    }
    var manifests: [Entry]
}
