import CofferTestSupport
import Foundation
import Testing

/// The syncs of one write, in order, as docs/reliability.md ("Which syncs a
/// write makes") lists them: journal records, the folder (the journal's
/// name), journal header, the vault, then — after the journal is removed —
/// the folder again, without which a power cut could bring the journal back
/// and undo a write that had been reported done. Seen with strace on a real
/// `coffer add`.
@Suite("a write syncs what the durability promise needs", .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct WriteSyncsInteropTests {
    @Test func addSyncsJournalFolderVaultAndTheJournalsRemoval() throws {
        let (home, env) = try AddFastPathTests.sessionHome()
        let log = home.path("strace.log")
        let r = Spawn.run(
            "/usr/bin/strace", ["-f", "-qq", "-y", "-o", log, "-e", "trace=fsync,fdatasync,unlink,unlinkat", "--", CofferBinary.path, "add", "sync/one"],
            stdin: "value-1\n", fd3: nil, environment: home.environment.merging(env) { $1 }, workDir: home.root.path)
        #expect(r.status == 0, "\(r)")
        let vault = home.vaultPath
        let folder = (vault as NSString).deletingLastPathComponent
        // One event per line: "sync PATH" or "unlink PATH" (unlink or
        // unlinkat: glibc uses the latter on some architectures), for the
        // vault's own files and folder only.
        let ours: Set<String> = [vault, vault + "-journal", folder]
        let events: [String] = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard let paren = line.firstIndex(of: "(") else { return nil }
            let call = line[..<paren].split(separator: " ").last.map(String.init) ?? ""
            let event: String
            if call == "unlink" || call == "unlinkat" {
                let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
                guard quoted.count > 2 else { return nil }
                event = "unlink " + quoted[1]
            } else if call == "fsync" || call == "fdatasync" {
                guard let open = line[paren...].firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else { return nil }
                event = "sync " + line[line.index(after: open)..<close]
            } else {
                return nil
            }
            return ours.contains(String(event.split(separator: " ", maxSplits: 1)[1])) ? event : nil
        }
        let expected = [
            "sync \(vault)-journal", "sync \(folder)", "sync \(vault)-journal", "sync \(vault)",
            "unlink \(vault)-journal", "sync \(folder)",
        ]
        #expect(events == expected, "\(events)")
        #expect(home.run(["get", "sync/one"], env: env).out == "value-1")
    }
}
