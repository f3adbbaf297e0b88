import ArgumentParser
import CofferKit
import CofferSync

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check that the vault file was not modified outside coffer.",
        discussion: """
            Recomputes the vault MAC over the header, the replica table, every item and every \
            version, checks each item's integrity record against its rows and name index, and \
            authenticates every current and history version, and compares the schema with a Coffer vault's (a trigger, a view, an index coffer never creates, WAL journal mode). Exits 0 when all hold, 65 when \
            something does (each problem is named on stderr; no value is ever printed). \
            See `coffer help threat-model`.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON (Schemas/verify.schema.json).")
    var json = false

    func run() throws {
        // Opened even with a trigger in it (every other command refuses
        // one at open), so that the report names it with the rest.
        let vault = try options.unlock(try VaultFile.open(path: options.path, forVerifying: true))
        let report = try vault.verify()
        if json {
            try Output.json(VerifyJSON(report))
        } else {
            for p in report.problems {
                Output.err("coffer: verify: \(p.item.map { "item \($0.hex.prefix(8)): " } ?? "")\(p.message)")
            }
        }
        guard report.isSound else {
            let n = report.problems.count
            Output.fail(
                CofferError(
                    .badData, "vault file was modified outside coffer or is damaged: \(n) problem\(n == 1 ? "" : "s") found",
                    hint: "restore the vault from a backup, or clone it again from a bundle of another replica"))
        }
        if !json {
            Output.note(
                "vault verified: \(report.items) items, \(report.versions) current and \(report.historyVersions) history versions, \(report.replicas) replicas")
        }
    }
}

struct VerifyJSON: Encodable {
    struct Problem: Encodable {
        var check: String
        @NullEncoded var item: String?
        var message: String

    }

    var sound: Bool
    var formatVersion: Int
    var items: Int
    var versions: Int
    var historyVersions: Int
    var replicas: Int
    var problems: [Problem]

    init(_ r: VerifyReport) {
        sound = r.isSound
        formatVersion = r.formatVersion
        items = r.items
        versions = r.versions
        historyVersions = r.historyVersions
        replicas = r.replicas
        problems = r.problems.map { Problem(check: $0.check.rawValue, item: $0.item?.hex, message: $0.message) }
    }
}
