import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// What `coffer find` matched.
public struct FoundItem: Sendable, Equatable {
    public var summary: ItemSummary
    /// Where the term was found: `name`, `tag`, `source`, `username`, `url`.
    public var matchedIn: [String]
}

/// Case- and diacritic-insensitive substring search. Foundation's
/// `range(of:options:)` costs microseconds per call (ICU collation); when
/// the term and the text are both ASCII — neither has diacritics nor
/// characters whose case folding leaves ASCII — folding ASCII letters is
/// the same comparison, done on bytes.
struct TextMatcher {
    let needle: String
    /// The needle's bytes with A–Z folded to a–z, nil when not ASCII.
    let asciiFolded: [UInt8]?

    init(_ needle: String) {
        self.needle = needle
        asciiFolded = needle.utf8.allSatisfy({ $0 < 0x80 }) ? needle.utf8.map(TextMatcher.fold) : nil
    }

    @inline(__always) static func fold(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

    func matches(_ text: String) -> Bool {
        if let n = asciiFolded {
            var text = text
            if let found = text.withUTF8({ bytes -> Bool? in
                var ascii = true
                for b in bytes where b >= 0x80 {
                    ascii = false
                    break
                }
                guard ascii else { return nil }
                return TextMatcher.contains(bytes, n)
            }) {
                return found
            }
        }
        return text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
    }

    /// Whether ASCII `text` holds `folded` (already folded), ignoring case.
    static func contains(_ text: UnsafeBufferPointer<UInt8>, _ folded: [UInt8]) -> Bool {
        let n = folded.count
        guard n <= text.count else { return false }
        if n == 0 { return true }
        let first = folded[0]
        var i = 0
        while i <= text.count - n {
            if fold(text[i]) == first {
                var j = 1
                while j < n && fold(text[i + j]) == folded[j] { j += 1 }
                if j == n { return true }
            }
            i += 1
        }
        return false
    }
}

extension Items {
    // MARK: find

    package func find(_ term: String) throws(CofferError) -> [FoundItem] {
        try Self.find(term, in: list())
    }

    /// ``find(_:)`` over a listing already read.
    package static func find(_ term: String, in items: [ItemSummary]) throws(CofferError) -> [FoundItem] {
        let needle = term.precomposedStringWithCanonicalMapping
        guard !needle.isEmpty else { throw CofferError(.usage, "the search term is empty") }
        let matcher = TextMatcher(needle)
        func has(_ s: String) -> Bool { matcher.matches(s) }
        var out: [FoundItem] = []
        for s in items {
            var matched: [String] = []
            if has(s.name) { matched.append("name") }
            if s.tags.contains(where: has) { matched.append("tag") }
            if let src = s.source, has(src) { matched.append("source") }
            // The listing carries username and url only when not secret.
            if let u = s.username, has(u) { matched.append("username") }
            if let u = s.url, has(u) { matched.append("url") }
            if !matched.isEmpty { out.append(FoundItem(summary: s, matchedIn: matched)) }
        }
        return out
    }

    // MARK: mv / cp

    package func plan(from: String, to: String) throws(CofferError) -> [(from: String, to: String)] {
        if from.hasSuffix("/") || to.hasSuffix("/") {
            guard from.hasSuffix("/"), to.hasSuffix("/") else {
                throw CofferError(.usage, "to move or copy a prefix, end both names with '/'", remedy: .init(.endPrefixesWithSlash, "e.g. work/ and old-work/"))
            }
            let oldPrefix = try Vault.normalizeName(String(from.dropLast())) + "/"
            let newPrefix = try Vault.normalizeName(String(to.dropLast())) + "/"
            guard oldPrefix != newPrefix else { throw CofferError(.usage, "the old and new prefix are the same") }
            let names = try list().map(\.name).filter { $0.hasPrefix(oldPrefix) }
            guard !names.isEmpty else {
                throw CofferError(.itemNotFound, "no item is under '\(oldPrefix)'", remedy: .init(.listItems, "list the vault's items"))
            }
            return try names.map { n throws(CofferError) in
                (n, try Vault.normalizeName(newPrefix + n.dropFirst(oldPrefix.count)))
            }
        }
        let old = try Vault.normalizeName(from)
        let new = try Vault.normalizeName(to)
        guard old != new else { throw CofferError(.usage, "the old and new name are the same") }
        return [(old, new)]
    }

    package func move(_ pairs: [(from: String, to: String)]) throws(CofferError) {
        try transfer(pairs, copy: false)
    }

    package func copy(_ pairs: [(from: String, to: String)]) throws(CofferError) {
        try transfer(pairs, copy: true)
    }

    private func transfer(_ pairs: [(from: String, to: String)], copy: Bool) throws(CofferError) {
        for p in pairs {
            try CredentialRequirements.checkNotReserved(p.to)
            try CredentialRequirements.checkNotReserved(p.from)
        }
        let targets = pairs.map(\.to)
        if let dup = targets.first(where: { t in targets.filter { $0 == t }.count > 1 }) {
            throw CofferError(.usage, "two items would be named '\(dup)'")
        }
        try CofferError.wrap {
            try write { db, mac in
                let ids = try pairs.map { try resolve(db, $0.from) }
                let moving = Set(ids)
                for p in pairs {
                    let clash = try Queries.itemIDs(db, nameHash: KeyHierarchy.nameHash(p.to, nameKey: keys.nameIndex))
                    // Moving a/ to b/ may rename onto a name another moved item frees.
                    if !clash.isEmpty && (copy || !clash.allSatisfy(moving.contains)) {
                        throw CofferError(
                            .duplicateName, "an item named '\(p.to)' already exists", hint: "choose another name, or remove or move that item first")
                    }
                }
                for (id, p) in zip(ids, pairs) {
                    guard let (oldRow, old, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(p.from)'") }
                    let now = Clock.nowMillis()
                    if copy {
                        let item = try decode(old, row: oldRow)
                        try insertCopy(db, of: item, named: p.to, policy: oldRow.policy, now: now, mac: mac)
                    } else {
                        var changes = [
                            Change(register: .name, payload: FieldPayload(name: "@name", value: Array(p.to.utf8), isSecret: false), tombstone: false)
                        ]
                        if !(old.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
                            // Renaming an item deleted concurrently keeps it (as any edit does).
                            changes.append(Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true))
                        }
                        var state = old
                        apply(changes, to: &state, dot: try identity.nextDot(db, mac), at: now)
                        let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                        try save(db, row: row, old: old, new: state, now: now, mac: mac)
                    }
                }
            }
        }
    }

    private func insertCopy(_ db: StoreConnection, of item: Item, named name: String, policy: SyncPolicy, now: Int64, mac: VaultMAC) throws {
        let id = ItemID.random()
        func meta(_ rid: RegisterID, _ label: String, _ text: String) -> Change {
            Change(register: rid, payload: FieldPayload(name: label, value: Array(text.utf8), isSecret: false), tombstone: false)
        }
        var changes = [meta(.name, "@name", name), meta(.type, "@type", item.type.rawValue)]
        if !item.tags.isEmpty { changes.append(meta(.tags, "@tags", Vault.tagsText(item.tags))) }
        if let s = item.source { changes.append(meta(.source, "@source", s)) }
        if let e = item.expires { changes.append(meta(.expires, "@expires", e.description)) }
        if !item.env.isEmpty || !item.allowedEnvNames.isEmpty {
            changes.append(meta(.env, "@env", Interchange.envText(item.env, allowed: item.allowedEnvNames)))
        }
        for f in item.fields {
            changes.append(
                Change(
                    register: registerID(field: f.name, item: id), payload: FieldPayload(name: f.name, value: f.bytes, isSecret: f.isSecret, isFile: f.isFile),
                    tombstone: false))
        }
        var state = ItemState(id: id)
        apply(changes, to: &state, dot: try identity.nextDot(db, mac), at: now)
        let row = try derivedRow(for: state, policy: policy, createdAt: now, updatedAt: now)
        var shown: [RegisterID: FieldPayload] = [:]
        for c in changes { shown[c.register] = c.payload }
        try save(db, row: row, old: nil, new: state, now: now, mac: mac, shown: shown)
    }
}
