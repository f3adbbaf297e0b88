import ArgumentParser
import CofferKit
import Foundation

struct Audit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Report weak, reused, expired, old and breached secrets (names only, never values).",
        discussion: """
            Looks at every secret field (not notes) of the items called NAME-PREFIX or under it \
            (all items without one). weak: estimated below --min-bits (default 50) by a \
            pattern-aware estimate (common passwords, words, keyboard walks, repeats, sequences, \
            dates); reused: the same value in two or more places; expired, or expiring within \
            --expiring (default 30d); old: unchanged for more than --older-than (default 365d); \
            breached: listed in --hibp-file, a Have I Been Pwned SHA-1 file (HASH:COUNT lines \
            sorted by hash). Exit status: 1 when an issue named in --fail-on is found, else 0; \
            64-77 for errors as everywhere (`coffer help audit`).
              coffer audit --fail-on weak,reused,breached --hibp-file pwned-passwords-sha1.txt
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Audit only items with this name or under it (e.g. work).", valueName: "name-prefix"))
    var namePrefix: String?

    @Option(
        help: ArgumentHelp(
            "Exit 1 when one of these issues is found: weak, reused, expired, expiring, old, breached, or all (every issue checked).", valueName: "issues"))
    var failOn: String?

    @Option(help: ArgumentHelp("A Have I Been Pwned Pwned Passwords SHA-1 file (HASH:COUNT, sorted by hash).", valueName: "file"))
    var hibpFile: String?

    @Option(help: ArgumentHelp("Secrets estimated below this many bits are weak (default 50).", valueName: "bits"))
    var minBits: String?

    @Option(help: ArgumentHelp("Report items expiring within this span (default 30d; e.g. 0d, 6w, 3m).", valueName: "span"))
    var expiring: String?

    @Option(help: ArgumentHelp("Report secrets unchanged for longer than this span (default 365d; e.g. 6m, 2y).", valueName: "span"))
    var olderThan: String?

    @Flag(help: "Print JSON (Schemas/audit.schema.json).")
    var json = false

    /// Exit status when an issue named in --fail-on is found.
    static let issuesFoundExitCode: Int32 = 1

    func run() throws {
        // Every argument is checked, and the HIBP file opened, before the
        // vault is unlocked: a mistake never costs a passphrase prompt.
        var failSet = try Audit.parseFailOn(failOn)
        var o = AuditOptions()
        if let minBits {
            guard let b = Double(minBits), b.isFinite, (0...1000).contains(b) else {
                throw CofferError(.usage, "invalid --min-bits '\(minBits)'", hint: "give a number of bits from 0 to 1000, e.g. --min-bits 60")
            }
            o.minimumBits = b
        }
        if let expiring {
            guard let d = Day.parseSpan(expiring) else {
                throw CofferError(.usage, "invalid --expiring '\(expiring)'", hint: "use a span such as 30d, 6w, 3m, 1y")
            }
            o.expiringWithinDays = d
        }
        if let olderThan {
            guard let d = Day.parseSpan(olderThan) else {
                throw CofferError(.usage, "invalid --older-than '\(olderThan)'", hint: "use a span such as 365d, 6m, 2y")
            }
            o.olderThanDays = d
        }
        if hibpFile == nil && failOn?.lowercased().split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "all" }) == true {
            failSet.remove(.breached) // "all": every issue that is checked
        }
        if failSet.contains(.breached) && hibpFile == nil {
            throw CofferError(.usage, "--fail-on breached needs a breach source", hint: "pass --hibp-file FILE (a Pwned Passwords SHA-1 file)")
        }
        if let hibpFile { o.breachSource = try HIBPFile(path: hibpFile) }
        if let namePrefix {
            o.namePrefix = try Vault.normalizeName(namePrefix.hasSuffix("/") ? String(namePrefix.dropLast()) : namePrefix)
        }

        let vault = try options.unlock()
        let report = try vault.audit(o)
        let failed = report.contains(any: failSet)
        if json {
            try Output.json(AuditJSON(report: report, failOn: failSet, ok: !failed, hibpFile: hibpFile))
        } else {
            printTable(report)
        }
        let counts = AuditIssue.allCases.compactMap { i -> String? in
            let n = report.count(of: i)
            return n == 0 ? nil : "\(i.rawValue) \(n)"
        }
        let items = Set(report.findings.map(\.item)).count
        if report.findings.isEmpty {
            Output.note(
                "no issues in \(report.secretsAudited) secret\(report.secretsAudited == 1 ? "" : "s") of \(report.itemsAudited) item\(report.itemsAudited == 1 ? "" : "s")"
            )
        } else {
            Output.note(
                "\(report.findings.count) issue\(report.findings.count == 1 ? "" : "s") in \(items) of \(report.itemsAudited) item\(report.itemsAudited == 1 ? "" : "s") (\(counts.joined(separator: ", ")))"
            )
        }
        if o.breachSource == nil && !json {
            Output.note("breached passwords not checked: pass --hibp-file FILE")
        }
        if failed { throw ExitCode(Audit.issuesFoundExitCode) }
    }

    static func parseFailOn(_ text: String?) throws(CofferError) -> Set<AuditIssue> {
        guard let text else { return [] }
        var out = Set<AuditIssue>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let p = part.trimmingCharacters(in: .whitespaces).lowercased()
            if p == "all" {
                out.formUnion(AuditIssue.allCases)
                continue
            }
            guard let i = AuditIssue(rawValue: p) else {
                throw CofferError(
                    .usage, "unknown issue '\(p)' in --fail-on",
                    hint: "use a comma-separated list of: " + AuditIssue.allCases.map(\.rawValue).joined(separator: ", ") + ", or all")
            }
            out.insert(i)
        }
        return out
    }

    func printTable(_ report: AuditReport) {
        guard !report.findings.isEmpty else { return }
        let width = min(max(report.findings.map { $0.item.count }.max() ?? 0, 4), 40)
        Output.out("ITEM".padding(toLength: width, withPad: " ", startingAt: 0) + "  ISSUE     DETAIL")
        for f in report.findings {
            var line = f.item.padding(toLength: max(width, f.item.count), withPad: " ", startingAt: 0) + "  "
            line += f.issue.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0) + "  "
            if let field = f.field { line += field + ": " }
            line += f.detail
            Output.out(line)
        }
    }
}

/// `coffer audit --json` (Schemas/audit.schema.json).
struct AuditJSON: Encodable {
    struct Finding: Encodable {
        var issue: String
        var item: String
        var field: String?
        var detail: String
        var bits: Double?
        var reason: String?
        var reuseGroup: Int?
        var expires: String?
        var changedAt: Date?
        var days: Int?
        var breachCount: Int?

        enum CodingKeys: String, CodingKey {
            case issue, item, field, detail, bits, reason, reuseGroup, expires, changedAt, days, breachCount
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(issue, forKey: .issue)
            try c.encode(item, forKey: .item)
            try c.encode(field, forKey: .field)
            try c.encode(detail, forKey: .detail)
            try c.encodeIfPresent(bits, forKey: .bits)
            try c.encodeIfPresent(reason, forKey: .reason)
            try c.encodeIfPresent(reuseGroup, forKey: .reuseGroup)
            try c.encodeIfPresent(expires, forKey: .expires)
            try c.encodeIfPresent(changedAt, forKey: .changedAt)
            try c.encodeIfPresent(days, forKey: .days)
            try c.encodeIfPresent(breachCount, forKey: .breachCount)
        }
    }
    struct Member: Encodable {
        var item: String
        var field: String
    }
    struct Thresholds: Encodable {
        var minBits: Double
        @NullEncoded var expiringDays: Int?
        @NullEncoded var olderThanDays: Int?

    }
    struct Breach: Encodable {
        var kind: String
        var path: String
    }
    var ok: Bool
    var failOn: [String]
    var itemsAudited: Int
    var secretsAudited: Int
    var thresholds: Thresholds
    @NullEncoded var breachSource: Breach?
    var counts: [String: Int]
    var findings: [Finding]
    var reusedGroups: [[Member]]

    init(report: AuditReport, failOn: Set<AuditIssue>, ok: Bool, hibpFile: String?) {
        self.ok = ok
        self.failOn = failOn.sorted().map(\.rawValue)
        itemsAudited = report.itemsAudited
        secretsAudited = report.secretsAudited
        let o = report.options
        thresholds = Thresholds(minBits: o.minimumBits, expiringDays: o.expiringWithinDays, olderThanDays: o.olderThanDays)
        breachSource = hibpFile.map { Breach(kind: "hibp-file", path: $0) }
        var counts: [String: Int] = [:]
        for i in AuditIssue.allCases { counts[i.rawValue] = report.count(of: i) }
        self.counts = counts
        findings = report.findings.map { f in
            Finding(
                issue: f.issue.rawValue, item: f.item, field: f.field, detail: f.detail, bits: f.bits, reason: f.reason,
                reuseGroup: f.reuseGroup, expires: f.expires?.description, changedAt: f.changedAt, days: f.days,
                breachCount: f.breachCount)
        }
        reusedGroups = report.reusedGroups.map { $0.map { Member(item: $0.item, field: $0.field) } }
    }
}
