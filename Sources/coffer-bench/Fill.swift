import ArgumentParser
import CofferBenchSupport
import CofferKit

/// Fills a vault with generated items, for benchmarks
/// (scripts/bench-bundles.sh).
struct Fill: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fill",
        abstract: "Add N generated items in one transaction (benchmarks only).")

    @OptionGroup var options: BenchVaultOptions

    @Argument(help: "Number of items.")
    var count: Int

    @Option(help: "Name prefix.")
    var prefix = "bench/item-"

    func run() throws {
        let vault = try options.unlock()
        try vault._bulkAddForBenchmarks(count: count, prefix: prefix)
        note("added \(count) generated items")
    }
}
