import ArgumentParser
import CofferKit

/// Fills a vault with synthetic items for benchmarks (`make bench`).
/// Hidden from help: it is a measuring tool, not a user feature.
struct Populate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-populate",
        abstract: "Add COUNT synthetic api-key items named bench/NNNNNN (for benchmarks).",
        shouldDisplay: false)

    @OptionGroup var options: VaultOptions

    @Option(help: "Number of items.")
    var count: Int = 1000

    @Option(help: "Name prefix.")
    var prefix = "bench/"

    func run() throws {
        let vault = try options.unlock()
        var batch: [ItemDraft] = []
        for i in 0..<count {
            batch.append(ItemDraft(
                name: "\(prefix)\(String(format: "%06d", i))", type: .apiKey,
                fields: [Field(name: "key", value: "sk-bench-\(i)-0123456789abcdefghijklmnop", isSecret: true)],
                tags: i % 10 == 0 ? ["tenth"] : [], source: "bench"))
            if batch.count == 5000 {
                try vault.add(batch)
                batch.removeAll()
            }
        }
        if !batch.isEmpty { try vault.add(batch) }
        Output.note("added \(count) items")
    }
}
