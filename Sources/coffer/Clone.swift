import ArgumentParser
import CofferKit
import Foundation

struct Clone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Create this machine's vault from a sync folder or full bundles.",
        discussion: """
            Creates a new replica of the vault that exported the bundles (same vault and passphrase, a \
            new replica id) at --vault PATH (default: the usual vault path). SOURCE is a sync folder \
            (its newest full bundle is used) or one or more bundle files (`coffer clone \
            ~/Sync/coffer/*.coffer-bundle`): the newest full bundle makes the vault, and the others of \
            the same vault are merged into it. Asks for the passphrase of the exporting vault. Refuses \
            a bundle asking Argon2id for more than 1 GiB, 10 passes or 8 lanes (exit 65) unless \
            --allow-expensive-kdf. Refuses \
            to replace an existing file (exit 73), bundles of several vaults or no full bundle (exit \
            65) and a folder without bundles (exit 66); on a failure of the first bundle no vault file is left \
            behind. A later bundle that cannot be merged is reported (exit 65); the vault stays. \
            With --identity FILE (a member identity file, mode 0600), no passphrase is asked: the \
            bundle's key sealed to that identity opens it, and the new replica unlocks with the same \
            file (exit 77 when the bundle's key is not sealed to it; docs/sharing.md).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("A sync folder, or full bundles written by `coffer export` or `coffer sync`.", valueName: "source"))
    var sources: [String] = []

    @Flag(help: "Run Argon2id with the bundle's parameters even above the local ceiling (1 GiB, 10 passes, 8 lanes).")
    var allowExpensiveKdf = false

    /// The usage rules argument-parser cannot express, checked first in
    /// ``run()`` so that they fail like every other usage error
    /// (`coffer: error:` and exit 64, docs/exit-codes.md).
    func checkUsage() throws(CofferError) {
        if sources.isEmpty { throw CofferError(.usage, "give a sync folder or a bundle file to clone from", hint: "see `coffer clone --help`") }
    }

    func run() throws {
        try checkUsage()
        let path = options.path
        // The identity file is read first: a missing (66), open (77) or
        // malformed (65) one is reported before any bundle is read.
        let identity = try options.identityFile.map { (f: String) throws(CofferError) in try MemberIdentityFile.readPrivate(path: f) }
        VaultFile.sweepStaleTemporaries(forVaultAt: path)
        if sources == ["-"] {
            // A bundle on standard input: it can be read only once, so the
            // clone itself checks it.
            if FileManager.default.fileExists(atPath: path) {
                throw CofferError(
                    .vaultExists, "a file already exists at \(path)",
                    hint: "choose another --vault path, or import the bundle into that vault with `coffer import`")
            }
            defer { Progress.clear() }
            let r =
                if let identity {
                    try Vault.clone(bundleAt: "-", to: path, identity: identity, progress: Progress.importing("-"))
                } else {
                    try Vault.clone(
                        bundleAt: "-", to: path, passphrase: try options.passphrase(), allowExpensiveKDF: allowExpensiveKdf, progress: Progress.importing("-"))
                }
            Progress.clear()
            let info = try VaultFile.open(path: path).info()
            let n = r.listedItems ?? r.added
            Output.note("created vault \(path) from -: \(n) item\(n == 1 ? "" : "s")")
            Output.note("vault id \(info.vaultID.hex), replica id \(info.replicaID.hex)")
            return
        }
        // Headers only (no passphrase yet): which bundles, of which vault.
        var bundles: [BundleInfo] = []
        for s in sources {
            if Vault.isFolder(s) {
                let found = try Vault.bundlesInFolder(s)
                if found.isEmpty {
                    throw CofferError(
                        .fileNotFound, "\(s) holds no Coffer bundle",
                        hint: "on a machine that has the vault, run `coffer sync \(s)` first (it writes its bundle there)")
                }
                bundles += found
            } else {
                bundles.append(try Vault.inspectBundle(at: s))
            }
        }
        let vaults = Set(bundles.map(\.header.vaultID))
        if vaults.count > 1 {
            throw CofferError(
                .badData, "the bundles belong to \(vaults.count) different vaults (\(vaults.sorted().map { $0.hex.prefix(8) + "…" }.joined(separator: ", ")))",
                hint: "give the bundles of one vault; `coffer inspect FILE` shows a bundle's vault id")
        }
        guard let newest = Vault.newestFullBundle(bundles) else {
            throw CofferError(
                .badData,
                "\(bundles.count == 1 ? "\(bundles[0].path) is a delta bundle" : "no full bundle among \(sources.joined(separator: " "))"); a clone needs a full bundle",
                hint: "on a machine that has the vault run `coffer sync DIR` or `coffer export --out FILE` (without --since)")
        }
        if !allowExpensiveKdf, identity == nil { try Vault.checkCloneKDF(newest.header.kdf, path: newest.path) }
        if FileManager.default.fileExists(atPath: path) {
            throw CofferError(
                .vaultExists, "a file already exists at \(path)",
                hint: "choose another --vault path, or merge the bundles into that vault with `coffer sync` or `coffer import`")
        }
        let passphrase = identity == nil ? try options.passphrase() : nil
        defer { Progress.clear() }
        // In a shared vault a member's full bundle carries only that
        // member's own writes to a new replica (docs/sharing.md, "Forwarded
        // versions"): the newest one may be refused as a start (say, bob's,
        // whose membership is alice's write). The other signed full bundles
        // are tried next, newest first; the refused one is merged after.
        let others = bundles.filter { $0.header.kind == .full && $0.path != newest.path && $0.header.publisher != nil }
            .sorted { ($0.header.createdAt, $0.path) > ($1.header.createdAt, $1.path) }
        let bases = [newest] + (newest.header.publisher != nil ? others : [])
        // The other files are merged by the clone itself, before the vault
        // appears at its path; files whose changes it has by then (the
        // base's own older snapshots and segments, what an earlier file
        // brought) are left out.
        var merges: [(BundleInfo, Result<ImportReport, CofferError>)] = []
        var first: CofferError?
        var made: (BundleInfo, ImportReport)?
        for base in bases {
            if base.path != newest.path, !allowExpensiveKdf, identity == nil, (try? Vault.checkCloneKDF(base.header.kdf, path: base.path)) == nil { continue }
            merges = []
            let rest = CloneMerge(
                bundles: bundles.filter { $0.path != base.path }, progress: { Progress.importing($0) },
                merged: { b, result in
                    Progress.clear()
                    if let result { merges.append((b, result)) }
                })
            do {
                let r =
                    if let identity {
                        try Vault.clone(bundleAt: base.path, to: path, identity: identity, progress: Progress.importing(base.path), merging: rest)
                    } else {
                        try Vault.clone(
                            bundleAt: base.path, to: path, passphrase: passphrase ?? SecretBytes(copying: []), allowExpensiveKDF: allowExpensiveKdf,
                            progress: Progress.importing(base.path), merging: rest)
                    }
                made = (base, r)
                break
            } catch {
                guard error.kind == .badData, bases.count > 1 else { throw error }
                Progress.clear()
                first = first ?? error
            }
        }
        guard let (base, r) = made else { throw first ?? CofferError(.badData, "no bundle could start the clone") }
        Progress.clear()
        let file = try VaultFile.open(path: path)
        let n = r.listedItems ?? r.added
        Output.note("created vault \(path) from \(base.path): \(n) item\(n == 1 ? "" : "s")")
        var failed = 0
        for (b, result) in merges {
            switch result {
            case .success(let m): Output.note(MergeReportLine.text("merged", b.path, m, replica: nil))
            case .failure(let error):
                failed += 1
                Output.warn("skipped \(b.path): \(ErrorWords.message(error))")
            }
        }
        let info = try file.info()
        Output.note("vault id \(info.vaultID.hex), replica id \(info.replicaID.hex)")
        if failed > 0 {
            throw CofferError(
                .badData, "\(failed) bundle\(failed == 1 ? "" : "s") could not be merged (see the warnings above); the vault was created from the others",
                hint: "run `coffer sync DIR` later to merge what is missing")
        }
    }
}
