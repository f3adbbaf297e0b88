import ArgumentParser
import CofferKit

/// Hidden: edits a range of generated items, for benchmarks
/// (scripts/bench-sync.sh). Not part of the documented interface.
struct DevTouch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-touch",
        abstract: "Give items <prefix>FROM..<prefix>TO-1 a new key, one write each (benchmarks only).",
        shouldDisplay: false)

    @OptionGroup var options: VaultOptions

    @Argument(help: "First item number.")
    var from: Int

    @Argument(help: "One past the last item number.")
    var to: Int

    @Option(help: "Name prefix.")
    var prefix = "bench/item-"

    func run() throws {
        let vault = try options.unlockForWriting()
        try vault._bulkEditForBenchmarks(range: from..<max(from, to), prefix: prefix)
        Output.note("edited \(max(0, to - from)) items")
    }
}
