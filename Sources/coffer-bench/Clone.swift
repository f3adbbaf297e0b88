import ArgumentParser
import CofferKit
import CofferSystem
import Foundation

/// Clones a full bundle, with or without the integrity data, for
/// benchmarks (scripts/bench-integrity.sh): the same bulk-import code, so
/// that the cost of item records and vault-MAC terms is measured against
/// that code with them turned off (issue 12's target: +10 % at most), and
/// the vault MAC's own share with the records kept (`--without-mac`).
struct Clone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Clone a full bundle into a new vault (benchmarks only).")

    @Argument(help: "The full bundle.")
    var bundle: String

    @Option(help: "The new vault file.")
    var vault: String

    @Option(help: "Read the passphrase from this file.")
    var passphraseFile: String

    @Flag(help: "Store no item records and no vault-MAC terms (the baseline; the vault is unusable).")
    var withoutIntegrity = false

    @Flag(help: "Store the item records but no vault-MAC terms (the vault is unusable).")
    var withoutMac = false

    func validate() throws {
        if withoutIntegrity && withoutMac { throw ValidationError("--without-integrity already leaves the MAC out") }
    }

    func run() throws {
        let report = try Replication._cloneForBenchmarks(
            bundleAt: bundle, to: vault, passphrase: try SecretInput.read(path: passphraseFile),
            records: !withoutIntegrity, mac: !withoutIntegrity && !withoutMac)
        let what = withoutIntegrity ? " without integrity data" : withoutMac ? " without vault-MAC terms" : ""
        note("cloned \(report.added) items\(what)")
    }
}
