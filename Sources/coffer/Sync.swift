import ArgumentParser
import CofferKit
import Foundation

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Merge the other replicas' bundles found in a folder, then write this replica's.",
        discussion: """
            DIR is any folder that a file transport keeps the same on every machine: a Syncthing or \
            Dropbox folder, a git work tree, a USB stick. Every file in DIR that is a bundle of this \
            vault from another replica is merged, whatever its name (conflict copies made by \
            Syncthing or Dropbox are just more bundles); bundles already merged are skipped by their \
            header alone. Then this replica's own bundle DIR/<replica-id>.coffer-bundle is written \
            atomically (temporary file, fsync, rename) when it changed. No other file is ever written, \
            so the transport never sees two machines write one file. Running sync twice changes \
            nothing the second time; when there is nothing to do, no passphrase is asked. \
            --dry-run shows item by item and field by field what merging would change, and changes \
            nothing. Exit status: 0; 65 when a bundle could not be merged (the others were, and this \
            replica's bundle was written, or DIR holds only another vault's bundles and nothing was \
            written); 66 no vault (when DIR holds bundles, the hint says `coffer clone DIR`); 73 DIR \
            cannot be created; 77 wrong passphrase (`coffer help sync`). A missing DIR is created (mode \
            0700) and sync says so. With --git, DIR is a clone of a repository every machine \
            pushes to: sync commits this replica's bundle if it changed, pulls with a rebase, \
            merges, and pushes, retrying up to 5 times when another machine pushed first (exit 74 \
            fetch or push failed, 75 still rejected); it works with an empty remote and with \
            nothing to commit.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("The sync folder.", valueName: "dir"))
    var dir: String

    @Flag(help: "Show what would change; change nothing.")
    var dryRun = false

    @Flag(help: "DIR is a git work tree: commit this replica's bundle, pull --rebase, merge, push (retried when another machine pushed first).")
    var git = false

    @Flag(
        help:
            "Adopt a newer master key (another machine's `coffer rekey`) even when its Argon2id parameters exceed this vault's own: without it such a key is not tried, since anyone who can write to DIR can drop a header that asks for them."
    )
    var adoptKey = false

    @Option(help: ArgumentHelp("With --git: the remote to pull from and push to (default: the branch's upstream, else origin).", valueName: "name"))
    var remote: String?

    /// The usage rules argument-parser cannot express, checked first in
    /// ``run()`` so that they fail like every other usage error
    /// (`coffer: error:` and exit 64, docs/exit-codes.md).
    func checkUsage() throws(CofferError) {
        if git && dryRun {
            throw CofferError(
                .usage, "--dry-run cannot be combined with --git (a dry run changes nothing, a git sync commits and pushes)", hint: "see `coffer sync --help`")
        }
        if remote != nil && !git { throw CofferError(.usage, "--remote needs --git", hint: "see `coffer sync --help`") }
    }

    func run() throws {
        try checkUsage()
        let file = try openVaultOrSuggestClone()
        if !git && !Vault.isFolder(dir) && !FileManager.default.fileExists(atPath: dir) {
            guard !dryRun else {
                throw CofferError(.fileNotFound, "no such folder: \(dir)", hint: "a sync without --dry-run creates it (mode 0700)")
            }
            try Vault.createSyncFolder(dir)
            Output.note("created the sync folder \(dir) (mode 0700)")
        }
        try Vault.checkSyncFolder(dir, file: file)
        if git {
            return try runGit(file)
        }
        if !dryRun, try Vault.syncIsNoop(file: file, dir: dir) {
            Output.note("nothing new in \(dir); this replica's bundle is current")
            return
        }
        let vault = try options.unlock(file)
        let adopting = try KeyAdoption.identity(of: vault)
        let report = try vault.sync(
            dir: dir, dryRun: dryRun, adoptAboveOwnKDF: adoptKey,
            adoptKey: adopting.passphraseToo
                ? { (epoch, path, attempt) throws(CofferError) in
                    try KeyAdoption.passphrases(for: path)(epoch, attempt)
                } : nil, identity: adopting.identity)
        if let r = report.rebinding { Output.note(r.message) }
        if let r = report.restamped { Output.note(r.message) }
        if let adopted = report.keyEpochAdopted {
            Output.note(KeyAdoption.message(adopted))
        }
        if dryRun, let pending = report.keyEpochPending {
            let how = adopting.identity != nil && !adopting.passphraseToo ? "through your identity" : "the passphrase is asked then"
            Output.out(
                "would adopt the new master key made on \(pending.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica") (key epoch \(pending.number)); its bundles cannot be previewed before (\(how))"
            )
        }
        for s in report.skipped where s.reason == .olderKeyEpoch { Output.note(Self.olderKeyNote(s.path)) }
        let base = { (p: String) in (p as NSString).lastPathComponent }
        for f in report.failed {
            let (message, hint) = ErrorWords.words(f.error)
            Output.warn("skipped \(base(f.path)): \(message)")
            if let hint { Output.err("coffer: hint: \(hint)") }
        }
        if let preview = report.preview {
            for r in report.merged {
                Output.out(MergeReportLine.text("would merge", base(r.path), r, kind: true))
                if let change = r.passphraseChange { Output.out(change.previewMessage) }
            }
            PreviewPrinter.print(preview)
            let skippedOld = report.skipped.filter { $0.reason == .nothingNew }.count
            if skippedOld > 0 { Output.out("\(skippedOld) bundle\(skippedOld == 1 ? "" : "s") with nothing new") }
            Output.out(report.wroteOwnBundle ? "would write \(base(report.ownBundle))" : "\(base(report.ownBundle)) is current")
            Output.note("dry run: nothing was changed")
        } else {
            for r in report.merged {
                Output.note(MergeReportLine.text("merged", base(r.path), r, conflicts: .brief))
                for line in MergeReportLine.skipped(r) { Output.note(line) }
                if let change = r.passphraseChange { Output.note(change.message) }
            }
            let skippedOld = report.skipped.filter { $0.reason == .nothingNew }.count
            if skippedOld > 0 { Output.note("skipped \(skippedOld) bundle\(skippedOld == 1 ? "" : "s") with nothing new") }
            for c in report.newConflicts {
                switch c.kind {
                case .field: Output.note("new conflict: \(c.item) field \(c.field) has \(c.sides.count) concurrent values")
                case .delete: Output.note("new conflict: \(c.item) was deleted on one replica while edited on another; kept")
                case .name: Output.note("new conflict: \(c.sides.count) items are named \(c.item)")
                }
            }
            if !report.newConflicts.isEmpty { Output.note("see `coffer conflicts`, settle with `coffer resolve`") }
            if report.readOnlyMember {
                Output.note("this identity is read-only in this vault: merged the others' files, wrote no bundle of its own")
            } else if report.wroteOwnBundle {
                Output.note("wrote \(base(report.ownBundle))")
            } else if report.merged.isEmpty {
                Output.note("nothing new; \(base(report.ownBundle)) is current")
            }
        }
        if !report.failed.isEmpty {
            let n = report.failed.count
            let foreign = report.failed.filter { $0.error.remedy?.action == .separateVaults }.count
            let hint: String
            let older = report.failed.filter { $0.error.remedy?.action == .restoreNewerFiles }.count
            if foreign == n {
                hint = "the folder holds bundles of a different vault: keep one vault's bundles per sync folder (move them to that vault's folder)"
            } else if older == n {
                hint =
                    "the folder was reset to older files of a member (see the warnings above): put the newer files back, or have that member run `coffer sync` again"
            } else {
                hint = "remove or replace the damaged file; its replica writes a fresh bundle on its next sync"
            }
            throw CofferError(
                .badData, "\(n) file\(n == 1 ? "" : "s") in \(dir) could not be merged (see the warnings above); everything else was synced",
                hint: hint)
        }
    }
}

extension Sync {
    /// Opens the vault; on a machine without one, when DIR already holds
    /// a vault's bundles, the hint says `coffer clone DIR` (not init).
    func openVaultOrSuggestClone() throws(CofferError) -> VaultFile {
        let result: Result<VaultFile, CofferError>
        do { result = .success(try options.openFile()) } catch { result = .failure(error) }
        switch result {
        case .success(let f):
            return f
        case .failure(var e):
            if e.kind == .vaultNotFound, Vault.isFolder(dir), let first = (try? Vault.bundlesInFolder(dir))?.first {
                e.hint =
                    "\(dir) holds bundles of a vault (vault id \(first.header.vaultID.hex.prefix(8))…): make this machine one of its replicas with `coffer clone \(dir)`, not `coffer init`"
            }
            throw e
        }
    }

    /// A file of an older key epoch is never read (docs/sync.md, "Master-key
    /// rotation"): a replica that has not yet adopted the new key, or a
    /// member removed since (docs/sharing.md), wrote it.
    static func olderKeyNote(_ path: String) -> String {
        "skipped \((path as NSString).lastPathComponent): written under an older master key, not read; its replica writes it again once it has adopted the new one (a removed member's replica never can)"
    }

    /// `sync DIR --git`: every round of merging is reported like a plain
    /// sync, then what git did.
    func runGit(_ file: VaultFile) throws {
        let vault = try options.unlock(file)
        let adopting = try KeyAdoption.identity(of: vault)
        let report = try vault.syncGit(
            dir: dir, remote: remote, note: { Output.note($0) }, adoptAboveOwnKDF: adoptKey,
            adoptKey: adopting.passphraseToo
                ? { (epoch, path, attempt) throws(CofferError) in
                    try KeyAdoption.passphrases(for: path)(epoch, attempt)
                } : nil, identity: adopting.identity)
        let base = { (p: String) in (p as NSString).lastPathComponent }
        var failed: [String: CofferError] = [:]
        for round in report.rounds {
            if let r = round.rebinding { Output.note(r.message) }
            if let r = round.restamped { Output.note(r.message) }
            if let adopted = round.keyEpochAdopted {
                Output.note(KeyAdoption.message(adopted))
            }
            for r in round.merged {
                Output.note(MergeReportLine.text("merged", base(r.path), r, conflicts: .brief))
                for line in MergeReportLine.skipped(r) { Output.note(line) }
            }
            for c in round.newConflicts { Output.note("new conflict: \(c.item) field \(c.field)") }
            for f in round.failed { failed[f.path] = f.error }
        }
        // A file skipped in every round (say, a removed member's) is named once.
        var older: [String] = []
        for round in report.rounds {
            for s in round.skipped where s.reason == .olderKeyEpoch && !older.contains(base(s.path)) { older.append(base(s.path)) }
        }
        for name in older { Output.note(Self.olderKeyNote(name)) }
        if report.rounds.contains(where: \.readOnlyMember) {
            Output.note("this identity is read-only in this vault: merged the others' files, wrote no bundle of its own")
        }
        if report.rounds.contains(where: { !$0.newConflicts.isEmpty }) { Output.note("see `coffer conflicts`, settle with `coffer resolve`") }
        let own = base(report.rounds.last?.ownBundle ?? "")
        Output.note(
            report.commits > 0
                ? "committed \(own) (\(report.commits) commit\(report.commits == 1 ? "" : "s"))"
                : own.isEmpty ? "nothing to commit" : "nothing to commit; \(own) is current")
        Output.note("pushed to \(report.remote)/\(report.branch)" + (report.attempts > 1 ? " after \(report.attempts) attempts" : ""))
        for (path, e) in failed.sorted(by: { $0.key < $1.key }) {
            Output.warn("skipped \(base(path)): \(ErrorWords.message(e))")
        }
        if !failed.isEmpty {
            let older = failed.values.allSatisfy { $0.remedy?.action == .restoreNewerFiles }
            throw CofferError(
                .badData,
                "\(failed.count) file\(failed.count == 1 ? "" : "s") in \(dir) could not be merged (see the warnings above); everything else was synced and pushed",
                hint: older
                    ? "the remote was reset to older files of a member (see the warnings above): push the newer commit back, or have that member run `coffer sync --git` again"
                    : "remove or replace the damaged file; its replica writes a fresh bundle on its next sync")
        }
    }
}

/// Prints a merge preview, item by item and field by field.
enum PreviewPrinter {
    static func print(_ p: MergePreview) {
        if p.items.isEmpty {
            Output.out("no item would change")
            return
        }
        for i in p.items {
            var head: String
            switch i.kind {
            case .added: head = "+ \(i.name)  (new item)"
            case .changed: head = "~ \(i.name)"
            case .deleted: head = "- \(i.name)  (deleted)"
            case .restored: head = "+ \(i.name)  (restored: an edit the delete had not seen)"
            }
            if let old = i.oldName { head += "  (was \(old))" }
            Output.out(head)
            for f in i.fields {
                let value = f.isSecret ? "(secret)" : (f.value.map { "'\($0)'" } ?? "")
                switch f.kind {
                case .added: Output.out("    \(f.field): added \(value)")
                case .changed: Output.out("    \(f.field): changed to \(value)")
                case .removed: Output.out("    \(f.field): removed")
                case .conflict: Output.out("    \(f.field): CONFLICT, \(f.sides) concurrent values (showing \(value.isEmpty ? "a removal" : value))")
                }
            }
            if i.opensDeleteConflict { Output.out("    CONFLICT: deleted on one replica while edited on another; the item stays") }
            if i.opensNameClash { Output.out("    CONFLICT: another item is already named \(i.name)") }
        }
    }
}
