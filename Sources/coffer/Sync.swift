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
            replica's bundle was written); 66 DIR missing; 77 wrong passphrase (docs/sync.md).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("The sync folder.", valueName: "dir"))
    var dir: String

    @Flag(help: "Show what would change; change nothing.")
    var dryRun = false

    func run() throws {
        let file = try options.openFile()
        if !dryRun, try Vault.syncIsNoop(file: file, dir: dir) {
            Output.note("nothing new in \(dir); this replica's bundle is current")
            return
        }
        let vault = try options.unlock(file)
        let report = try vault.sync(dir: dir, dryRun: dryRun)
        if let r = report.rebinding { Output.note(r.message) }
        let base = { (p: String) in (p as NSString).lastPathComponent }
        for f in report.failed {
            Output.warn("skipped \(base(f.path)): \(f.error.message)")
            if let h = f.error.hint { Output.err("coffer: hint: \(h)") }
        }
        if let preview = report.preview {
            for r in report.merged {
                Output.out("would merge \(base(r.path)) (\(r.kind.name), replica \(r.exportingReplica.hex.prefix(8))): \(r.added) added, \(r.changed) changed, \(r.unchanged) unchanged")
                if let change = r.passphraseChange { Output.out(change.previewMessage) }
            }
            PreviewPrinter.print(preview)
            let skippedOld = report.skipped.filter { $0.reason == .nothingNew }.count
            if skippedOld > 0 { Output.out("\(skippedOld) bundle\(skippedOld == 1 ? "" : "s") with nothing new") }
            Output.out(report.wroteOwnBundle ? "would write \(base(report.ownBundle))" : "\(base(report.ownBundle)) is current")
            Output.note("dry run: nothing was changed")
        } else {
            for r in report.merged {
                var line = "merged \(base(r.path)) (replica \(r.exportingReplica.hex.prefix(8))): \(r.added) added, \(r.changed) changed, \(r.unchanged) unchanged"
                if r.conflictsOpened > 0 { line += ", \(r.conflictsOpened) with new conflicts" }
                Output.note(line)
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
            if report.wroteOwnBundle {
                Output.note("wrote \(base(report.ownBundle))")
            } else if report.merged.isEmpty {
                Output.note("nothing new; \(base(report.ownBundle)) is current")
            }
        }
        if !report.failed.isEmpty {
            let n = report.failed.count
            throw CofferError(.badData, "\(n) file\(n == 1 ? "" : "s") in \(dir) could not be merged (see the warnings above); everything else was synced",
                hint: "remove or replace the damaged file; its replica writes a fresh bundle on its next sync")
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
