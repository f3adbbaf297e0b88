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
        // One event per line: "sync PATH" or "unlink PATH".
        let events: [String] = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard let paren = line.firstIndex(of: "("), let open = line.firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else {
                if line.contains("unlink(\"") {
                    return "unlink " + String(line.split(separator: "\"")[1])
                }
                return nil
            }
            let call = line[..<paren].split(separator: " ").last.map(String.init) ?? ""
            guard call == "fsync" || call == "fdatasync" else { return nil }
            return "sync " + line[line.index(after: open)..<close]
        }
        let expected = [
            "sync \(vault)-journal", "sync \(folder)", "sync \(vault)-journal", "sync \(vault)",
            "unlink \(vault)-journal", "sync \(folder)",
        ]
        #expect(events == expected, "\(events)")
        #expect(home.run(["get", "sync/one"], env: env).out == "value-1")
    }
}
