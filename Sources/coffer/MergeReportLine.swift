import CofferKit

/// The line that reports one merged bundle, built here for every command
/// that merges (`import`, `sync`, `sync --git`, `clone`) and their dry
/// runs, so that the counts read the same everywhere:
/// `VERB NAME (KIND, replica ID): N added, N changed, N unchanged[, conflicts]`.
enum MergeReportLine {
    /// The lines saying which forwarded versions a signed bundle's merge
    /// left out (rule forwarded-dot, docs/sharing.md "Signed writes").
    static func skipped(_ r: ImportReport) -> [String] {
        r.skippedForwarded.map { s in
            let whose = s.member.map { "\($0)'s replica" } ?? "a replica of no known member"
            return "skipped \(s.versions) forwarded version\(s.versions == 1 ? "" : "s") of \(whose): they arrive from its own files"
        }
    }

    /// How the line counts the conflicts the merge opened.
    enum Conflicts {
        /// Not at all (a dry run, a clone).
        case none
        /// `, N new conflicts (see `coffer conflicts`)`.
        case withHint
        /// `, N with new conflicts` (the sync summary names them after).
        case brief
    }

    /// `replica` is the word before the exporting replica's id (`"replica"`,
    /// `"from replica"`), nil to leave the id out.
    static func text(
        _ verb: String, _ name: String, _ r: ImportReport, kind: Bool = false, replica: String? = "replica", conflicts: Conflicts = .none
    ) -> String {
        var detail: [String] = []
        if kind { detail.append(r.kind.name) }
        if let replica { detail.append("\(replica) \(r.exportingReplica.hex.prefix(8))") }
        var line = verb + " " + name + (detail.isEmpty ? "" : " (" + detail.joined(separator: ", ") + ")")
        line += ": \(r.added) added, \(r.changed) changed, \(r.unchanged) unchanged"
        let n = r.conflictsOpened
        switch conflicts {
        case .none: break
        case .withHint: if n > 0 { line += ", \(n) new conflict\(n == 1 ? "" : "s") (see `coffer conflicts`)" }
        case .brief: if n > 0 { line += ", \(n) with new conflicts" }
        }
        return line
    }
}
