import CofferCrypto
import CofferStore
import CofferSync
import Dispatch
import Foundation

/// Audit: weak, reused, breached, old and expiring credentials, and the
/// vault's own health (docs/audit.md). The façade's forwarders are in
/// Audit/Vault+Audit.swift.
package struct Auditing: VaultComponent {
    package let core: VaultCore
}

/// A problem `coffer audit` reports.
public enum AuditIssue: String, Sendable, CaseIterable, Codable, Comparable {
    /// A secret's strength estimate is below the threshold.
    case weak
    /// The same secret value is stored in two or more places.
    case reused
    /// The item's expiry date has passed.
    case expired
    /// The item expires within the chosen span.
    case expiring
    /// The secret has not changed for longer than the chosen span.
    case old
    /// The secret appears in a breach corpus (an HIBP file).
    case breached

    public static func < (a: AuditIssue, b: AuditIssue) -> Bool {
        (allCases.firstIndex(of: a) ?? 0) < (allCases.firstIndex(of: b) ?? 0)
    }
}

/// What `Vault.audit` looks at, and its thresholds.
public struct AuditOptions: Sendable {
    /// Only items called this or under it (`work` selects `work` and
    /// `work/…`, not `workshop`); nil: every item.
    public var namePrefix: String?
    /// Secrets estimated below this many bits are weak.
    public var minimumBits: Double = PasswordStrength.weakThreshold
    /// Items expiring within this many days (from today) are `expiring`;
    /// nil: not checked. Expired items are always reported.
    public var expiringWithinDays: Int? = 30
    /// Secrets whose current value was written more than this many days
    /// ago are `old`; nil: not checked.
    public var olderThanDays: Int? = 365
    /// Where to look up breached passwords; nil: not checked.
    public var breachSource: (any BreachSource)?
    /// The day and time the audit counts from (tests set them).
    public var today: Day = .today
    public var now: Date = Date()

    public init() {}
}

/// One secret (a field of an item), named, never its value.
public struct AuditSecret: Sendable, Hashable, Comparable {
    public var item: String
    public var field: String

    public init(item: String, field: String) {
        self.item = item
        self.field = field
    }

    public static func < (a: AuditSecret, b: AuditSecret) -> Bool { (a.item, a.field) < (b.item, b.field) }
}

/// One problem found. `detail` is a sentence for people; the other
/// members carry the same facts for programs. Nothing here holds a value.
public struct AuditFinding: Sendable, Equatable {
    public var issue: AuditIssue
    public var item: String
    /// The field, for issues about a secret (all but expired/expiring).
    public var field: String?
    public var detail: String
    /// weak: the estimate.
    public var bits: Double?
    public var reason: String?
    /// reused: index into ``AuditReport/reusedGroups``.
    public var reuseGroup: Int?
    /// expired/expiring: the expiry day.
    public var expires: Day?
    /// old: when the current value was written.
    public var changedAt: Date?
    /// expired: days since expiry; expiring: days until it; old: days since
    /// the value was written.
    public var days: Int?
    /// breached: how often the corpus has seen the value.
    public var breachCount: Int?
}

/// The result of ``Vault/audit(_:)``.
public struct AuditReport: Sendable {
    /// Items looked at (after the name prefix).
    public var itemsAudited: Int
    /// Secret values looked at.
    public var secretsAudited: Int
    /// Sorted by item name, then issue, then field.
    public var findings: [AuditFinding]
    /// Groups of secrets holding the same value, each sorted, at least two
    /// members, at least one of them among the audited items.
    public var reusedGroups: [[AuditSecret]]
    public var options: AuditOptions

    public func count(of issue: AuditIssue) -> Int { findings.filter { $0.issue == issue }.count }

    /// Whether any finding is of one of these issues.
    public func contains(any issues: Set<AuditIssue>) -> Bool { findings.contains { issues.contains($0.issue) } }
}

extension Auditing {
    /// Fields whose secret value is prose rather than a credential; the
    /// audit leaves them out.
    static let unauditedFields: Set<String> = ["notes", "note"]

    package func audit(_ options: AuditOptions = AuditOptions()) throws(CofferError) -> AuditReport {
        struct Secret {
            var field: String
            var value: String
            var writtenAt: Int64
        }
        struct Entry {
            var name: String
            var expires: Day?
            var secrets: [Secret]
        }
        let entries: [Entry] = try CofferError.wrap {
            // The whole vault is read, so it is checked whole: the vault MAC
            // (an edit made outside coffer is reported, never audited).
            let (rows, states) = try store.read { db in
                try checkVaultMAC(db)
                return (try Queries.itemRows(db), try Queries.statesOfLiveItems(db))
            }
            var out: [Entry] = []
            out.reserveCapacity(rows.count)
            for row in rows {
                guard let state = states[row.id] else { continue }
                var entry = Entry(name: "", expires: nil, secrets: [])
                for (rid, versions) in state.registers {
                    guard let shown = Register.shown(versions), !shown.isTombstone else { continue }
                    switch rid {
                    case .name: entry.name = try open(shown, item: row.id, register: rid).text
                    case .expires: entry.expires = Day(try open(shown, item: row.id, register: rid).text)
                    default:
                        if rid.isMetadata { continue }
                        let p = try open(shown, item: row.id, register: rid)
                        guard p.isSecret, !p.value.isEmpty, !Self.unauditedFields.contains(p.name) else { continue }
                        entry.secrets.append(Secret(field: p.name, value: p.text, writtenAt: shown.writtenAt))
                    }
                }
                guard !Vault.isReserved(entry.name) else { continue }
                entry.secrets.sort { $0.field < $1.field }
                out.append(entry)
            }
            return out
        }

        let prefix = options.namePrefix.map { p in p.hasSuffix("/") ? String(p.dropLast()) : p }
        func selected(_ name: String) -> Bool {
            guard let prefix, !prefix.isEmpty else { return true }
            return name == prefix || name.hasPrefix(prefix + "/")
        }
        var findings: [AuditFinding] = []
        var audited: [(entry: Int, secret: Int)] = []
        var itemsAudited = 0
        for (i, e) in entries.enumerated() where selected(e.name) {
            itemsAudited += 1
            for j in e.secrets.indices { audited.append((i, j)) }
        }

        // Reused: keyed hashes of every secret (audited or not), grouped.
        let key = SecretBytes.random(count: 32)
        var groupsByHash: [[UInt8]: [AuditSecret]] = [:]
        for e in entries {
            for s in e.secrets {
                groupsByHash[KeyedHash.hash(Array(s.value.utf8), key: key, length: 32), default: []]
                    .append(AuditSecret(item: e.name, field: s.field))
            }
        }
        let groups = groupsByHash.values.filter { g in g.count > 1 && g.contains { selected($0.item) } }
            .map { $0.sorted() }.sorted { $0[0] < $1[0] }
        groupsByHash = [:]
        for (gi, g) in groups.enumerated() {
            for member in g where selected(member.item) {
                let others = g.filter { $0 != member }
                let list =
                    others.prefix(5).map { "\($0.item) (\($0.field))" }.joined(separator: ", ")
                    + (others.count > 5 ? ", and \(others.count - 5) more" : "")
                findings.append(
                    AuditFinding(
                        issue: .reused, item: member.item, field: member.field,
                        detail: "same value as \(list)", reuseGroup: gi))
            }
        }

        // Weak: the estimates, on every core.
        var estimates = [PasswordStrength.Estimate?](repeating: nil, count: audited.count)
        let work = audited
        estimates.withUnsafeMutableBufferPointer { buffer in
            let out = UnsafeSendableBuffer(buffer)
            let chunks = max(1, min(work.count, ProcessInfo.processInfo.activeProcessorCount * 4))
            DispatchQueue.concurrentPerform(iterations: chunks) { c in
                var k = c
                while k < work.count {
                    let (i, j) = work[k]
                    out.buffer[k] = PasswordStrength.estimate(entries[i].secrets[j].value)
                    k += chunks
                }
            }
        }
        for (k, (i, j)) in audited.enumerated() {
            guard let e = estimates[k], e.isWeak(threshold: options.minimumBits) else { continue }
            findings.append(
                AuditFinding(
                    issue: .weak, item: entries[i].name, field: entries[i].secrets[j].field,
                    detail: "estimated \(Int(e.bits.rounded(.down))) bits (below \(AuditReport.format(options.minimumBits))): \(e.reason)",
                    bits: (e.bits * 10).rounded() / 10, reason: e.reason))
        }

        // Breached.
        if let source = options.breachSource, !audited.isEmpty {
            let digests = audited.map { BreachLookup.sha1(entries[$0.entry].secrets[$0.secret].value) }
            let counts = try source.breachCounts(sha1: digests)
            for (k, (i, j)) in audited.enumerated() where k < counts.count && counts[k] > 0 {
                findings.append(
                    AuditFinding(
                        issue: .breached, item: entries[i].name, field: entries[i].secrets[j].field,
                        detail: "seen \(counts[k]) time\(counts[k] == 1 ? "" : "s") in breaches (\(source.label))",
                        breachCount: counts[k]))
            }
        }

        // Expired and expiring.
        for e in entries where selected(e.name) {
            guard let day = e.expires else { continue }
            let days = Int(((day.date.timeIntervalSince(options.today.date)) / 86400).rounded())
            if day < options.today {
                findings.append(
                    AuditFinding(
                        issue: .expired, item: e.name, detail: "expired on \(day), \(-days) day\(days == -1 ? "" : "s") ago",
                        expires: day, days: -days))
            } else if let within = options.expiringWithinDays, days <= within {
                findings.append(
                    AuditFinding(
                        issue: .expiring, item: e.name,
                        detail: days == 0 ? "expires today (\(day))" : "expires on \(day), in \(days) day\(days == 1 ? "" : "s")",
                        expires: day, days: days))
            }
        }

        // Old.
        if let limit = options.olderThanDays {
            for (i, j) in audited {
                let s = entries[i].secrets[j]
                let written = Date(timeIntervalSince1970: Double(s.writtenAt) / 1000)
                let days = Int((options.now.timeIntervalSince(written) / 86400).rounded(.down))
                guard days > limit else { continue }
                findings.append(
                    AuditFinding(
                        issue: .old, item: entries[i].name, field: s.field,
                        detail: "unchanged for \(days) days (since \(Day(written)))", changedAt: written, days: days))
            }
        }

        findings.sort { a, b in
            if a.item != b.item { return a.item < b.item }
            if a.issue != b.issue { return a.issue < b.issue }
            return (a.field ?? "") < (b.field ?? "")
        }
        return AuditReport(
            itemsAudited: itemsAudited, secretsAudited: audited.count, findings: findings, reusedGroups: groups,
            options: options)
    }
}

extension AuditReport {
    /// A threshold for people: no decimals when whole.
    static func format(_ bits: Double) -> String {
        bits == bits.rounded() ? String(Int(bits)) : String(format: "%.1f", bits)
    }
}

/// A buffer written by disjoint indexes from concurrent iterations.
private struct UnsafeSendableBuffer<T>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<T>
    init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }
}
