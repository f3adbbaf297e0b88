import ArgumentParser
import CofferKit
import Foundation

struct Replicas: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicas",
        abstract: "List the replicas this vault knows and what it last saw from each.",
        discussion: """
            A replica is one vault file on one machine. For each: its id, the highest write counter \
            seen from it, and when an imported bundle last covered it. The line marked * is this \
            vault file. JSON: Schemas/replicas.schema.json.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON (Schemas/replicas.schema.json).")
    var json = false

    func run() throws {
        let vault = try options.unlock()
        let all = try vault.replicas()
        if json {
            try Output.json(
                ReplicasJSON(
                    replicas: all.map {
                        ReplicasJSON.Replica(id: $0.id.hex, counter: $0.counter, lastImportAt: $0.lastImportAt, local: $0.isLocal)
                    }))
            return
        }
        for r in all {
            let when = r.lastImportAt.map { "last merged \(ISO8601.string($0))" } ?? (r.isLocal ? "this vault file" : "never merged directly")
            Output.out("\(r.isLocal ? "*" : " ") \(r.id.hex)  counter \(r.counter)  \(when)")
        }
    }
}

struct ReplicasJSON: Encodable {
    struct Replica: Encodable {
        var id: String
        var counter: UInt64
        @NullEncoded var lastImportAt: Date?
        var local: Bool
    }
    var replicas: [Replica]
}
