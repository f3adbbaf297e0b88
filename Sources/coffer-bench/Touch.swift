import ArgumentParser
import CofferBenchSupport
import CofferKit

/// Edits a range of generated items, for benchmarks
/// (scripts/bench-sync.sh).
struct Touch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touch",
        abstract: "Give items <prefix>FROM..<prefix>TO-1 a new key, one write each (benchmarks only).")

    @OptionGroup var options: BenchVaultOptions

    @Argument(help: "First item number.")
    var from: Int

    @Argument(help: "One past the last item number.")
    var to: Int

    @Option(help: "Name prefix.")
    var prefix = "bench/item-"

    func run() throws {
        let vault = try options.unlock()
        try vault._bulkEditForBenchmarks(range: from..<max(from, to), prefix: prefix)
        note("edited \(max(0, to - from)) items")
    }
}
