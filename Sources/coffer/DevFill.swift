import ArgumentParser
import CofferKit

/// Hidden: fills a vault with generated items, for benchmarks
/// (scripts/bench-bundles.sh). Not part of the documented interface.
struct DevFill: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-fill",
        abstract: "Add N generated items in one transaction (benchmarks only).",
        shouldDisplay: false)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Number of items.")
    var count: Int

    @Option(help: "Name prefix.")
    var prefix = "bench/item-"

    func run() throws {
        let vault = try options.unlock()
        try vault._bulkAddForBenchmarks(count: count, prefix: prefix)
        Output.note("added \(count) generated items")
    }
}
