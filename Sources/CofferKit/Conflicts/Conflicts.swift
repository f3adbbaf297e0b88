import CofferCrypto
import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif
/// Conflicts: listing the concurrent edits a merge kept side by side, and
/// settling them (docs/sync.md, "Conflicts"). The façade's forwarders
/// are in Conflicts/Vault+Conflicts.swift.
package struct ConflictResolution: VaultComponent {
    package let core: VaultCore
}

/// An open conflict in the vault: concurrent writes that a merge kept side
/// by side until someone settles them (docs/sync.md).
public struct VaultConflict: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// Concurrent values of one field (or of the name, tags, …).
        case field
        /// Deleted on one replica while edited concurrently on another: the
        /// item stays, flagged.
        case delete
        /// Two live items carry the same name (created or renamed
        /// concurrently on different replicas).
        case name
    }

    /// One side of a conflict.
    public struct Side: Sendable, Equatable {
        public enum Action: String, Sendable, Equatable {
            /// A value of the field.
            case value
            /// The field was removed.
            case removed
            /// The item was deleted.
            case delete
            /// An edit the delete had not seen (keeping it keeps the item).
            case edit
            /// One of the items sharing a name.
            case item
        }
        /// 1-based, for `coffer resolve --keep N`.
        public var number: Int
        public var action: Action
        /// The value (nil for secrets unless asked for, for removals and deletes).
        public var value: String?
        /// For an edit side of a delete conflict: the field it changed.
        public var field: String?
        /// The side currently shown.
        public var isShown: Bool
        public var writtenAt: Date
        public var replica: ReplicaID
        public var counter: UInt64
        /// For name clashes: the item this side is.
        public var itemID: ItemID?
    }

    public var kind: Kind
    /// The item's shown name.
    public var item: String
    public var itemID: ItemID
    /// The field's name (`@name`, `@tags`, … for metadata; `@deleted` for a
    /// delete conflict; `@name` for a name clash).
    public var field: String
    public var isSecret: Bool
    public var sides: [Side]
}

/// How `resolve` settles a conflict.
public enum Resolution: Sendable {
    /// Keep side N (1-based) as listed by ``Vault/conflicts(revealSecrets:)``.
    case keep(Int)
    /// Write this value.
    case value(String)
}

/// What `resolve` did.
public struct ResolveResult: Sendable, Equatable {
    public var item: String
    public var field: String
    /// The item was deleted (a delete conflict settled for the delete).
    public var deleted: Bool
    /// The value now held (nil for a removal, a delete or a secret).
    public var value: String?
}

extension ConflictResolution {
    // MARK: Listing

    package func conflicts(revealSecrets: Bool = false) throws(CofferError) -> [VaultConflict] {
        try CofferError.wrap {
            try store.read { db in
                var out: [VaultConflict] = []
                for id in try Queries.conflictedItemIDs(db) {
                    guard let (row, state, _) = try loadItem(db, id: id) else { continue }
                    out += try itemConflicts(state, row: row, revealSecrets: revealSecrets)
                }
                out += try nameClashes(db)
                return out.sorted { ($0.item, $0.field, $0.itemID) < ($1.item, $1.field, $1.itemID) }
            }
        }
    }

    /// The conflicts of one item (field and delete conflicts; name clashes
    /// are listed by ``conflicts(revealSecrets:)``).
    func itemConflicts(_ state: ItemState, row: ItemRow, revealSecrets: Bool) throws -> [VaultConflict] {
        let item = try decode(state, row: row)
        var out: [VaultConflict] = []
        for c in item.conflicts {
            let sides = c.sides.map { s in
                VaultConflict.Side(
                    number: s.number, action: s.value == nil ? .removed : .value,
                    value: (c.isSecret && !revealSecrets) ? nil : s.value, field: nil, isShown: s.isShown,
                    writtenAt: s.writtenAt, replica: s.replica, counter: s.dot.counter, itemID: nil)
            }
            out.append(VaultConflict(kind: .field, item: item.name, itemID: item.id, field: c.field, isSecret: c.isSecret, sides: sides))
        }
        if state.hasDeleteConflict {
            out.append(VaultConflict(kind: .delete, item: item.name, itemID: item.id, field: "@deleted", isSecret: false, sides: try deleteSides(state)))
        }
        return out
    }

    /// Sides of a delete conflict: the delete markers, then every version
    /// the deletes had not seen (the edits that keep the item alive).
    func deleteSides(_ state: ItemState) throws -> [VaultConflict.Side] {
        let markers = (state.registers[.deleted] ?? []).filter { !$0.isTombstone }.sorted { $0.dot < $1.dot }
        let seen = state.deleteVector ?? VersionVector()
        var sides: [VaultConflict.Side] = []
        for m in markers {
            sides.append(
                VaultConflict.Side(
                    number: sides.count + 1, action: .delete, value: nil, field: nil, isShown: false,
                    writtenAt: Clock.date(m.writtenAt), replica: m.dot.replica, counter: m.dot.counter, itemID: nil))
        }
        var edits: [(RegisterID, FieldVersion)] = []
        for (rid, versions) in state.registers where rid != .deleted {
            for v in versions where !seen.contains(v.dot) { edits.append((rid, v)) }
        }
        // One write may change several registers (same dot, same time):
        // the register id settles the tie, so the numbering is total and
        // the same on every replica and every run (`resolve --keep N`).
        edits.sort { ($0.1.writtenAt, $0.1.dot, $0.0) < ($1.1.writtenAt, $1.1.dot, $1.0) }
        for (rid, v) in edits {
            let p = try open(v, item: state.id, register: rid)
            sides.append(
                VaultConflict.Side(
                    number: sides.count + 1, action: .edit, value: nil, field: p.name, isShown: true,
                    writtenAt: Clock.date(v.writtenAt), replica: v.dot.replica, counter: v.dot.counter, itemID: nil))
        }
        return sides
    }

    /// Names carried by more than one live item.
    func nameClashes(_ db: StoreConnection) throws -> [VaultConflict] {
        let hashes = try Queries.sharedNameHashes(db)
        var out: [VaultConflict] = []
        for hash in hashes {
            let group = try Queries.itemIDs(db, nameHash: hash)
            guard group.count > 1 else { continue }
            var sides: [(FieldVersion, ItemID)] = []
            var name = ""
            for id in group {
                let versions = try Queries.versions(db, item: id, registers: [.name])[.name] ?? []
                guard let shown = Register.shown(versions) else { continue }
                name = try open(shown, item: id, register: .name).text
                sides.append((shown, id))
            }
            sides.sort { ($0.0.writtenAt, $0.1) < ($1.0.writtenAt, $1.1) }
            let first = sides.first?.1 ?? group[0]
            out.append(
                VaultConflict(
                    kind: .name, item: name, itemID: first, field: "@name", isSecret: false,
                    sides: sides.enumerated().map { i, s in
                        VaultConflict.Side(
                            number: i + 1, action: .item, value: "id:" + s.1.hex.prefix(8), field: nil, isShown: false,
                            writtenAt: Clock.date(s.0.writtenAt), replica: s.0.dot.replica, counter: s.0.dot.counter,
                            itemID: s.1)
                    }))
        }
        return out
    }

    // MARK: Resolving

    @discardableResult
    package func resolve(_ name: String, field: String?, with resolution: Resolution) throws(CofferError) -> ResolveResult {
        try CofferError.wrap {
            try write { db, mac in
                try identity.rebindIfCopied(db, mac)
                let id = try resolve(db, name)
                guard let (oldRow, old, _) = try loadItem(db, id: id) else { throw CofferError(.itemNotFound, "no item named '\(name)'") }
                let open = try itemConflicts(old, row: oldRow, revealSecrets: true)
                let itemName = try decode(old, row: oldRow).name
                guard !open.isEmpty else {
                    throw CofferError(.usage, "item '\(itemName)' has no conflict to resolve", remedy: .init(.listConflicts, "list the open conflicts"))
                }
                let conflict: VaultConflict
                if let field {
                    guard let c = open.first(where: { $0.field == field }) else {
                        throw CofferError(
                            .usage, "field '\(field)' of '\(itemName)' has no conflict",
                            hint: "conflicting: \(open.map(\.field).joined(separator: ", "))")
                    }
                    conflict = c
                } else {
                    guard open.count == 1 else {
                        throw CofferError(
                            .usage, "item '\(itemName)' has \(open.count) conflicts; say which field", argument: "field",
                            hint: "conflicting: \(open.map(\.field).joined(separator: ", "))")
                    }
                    conflict = open[0]
                }
                let now = Clock.nowMillis()
                var state = old
                var result = ResolveResult(item: itemName, field: conflict.field, deleted: false, value: nil)

                if conflict.kind == .delete {
                    guard case .keep(let n) = resolution else {
                        throw CofferError(
                            .usage, "a delete conflict is settled by keeping side N (a delete side removes the item, an edit side keeps it)",
                            remedy: .init(.seeConflictSides, "see the sides of the conflict", item: itemName, field: conflict.field), argument: "keep")
                    }
                    let side = try Self.side(n, of: conflict)
                    let dot = try identity.nextDot(db, item: id, policy: oldRow.policy, mac: mac)
                    if side.action == .delete {
                        var vector = old.vector
                        vector[dot.replica] = dot.counter
                        state.registers[.deleted] = [
                            seal(
                                FieldPayload(name: "@deleted", value: Array("1".utf8), isSecret: false), item: id, register: .deleted, dot: dot, vector: vector,
                                at: now, tombstone: false)
                        ]
                        result.deleted = true
                    } else {
                        // A tombstone over every delete marker: the item stays.
                        apply(
                            [Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true)], to: &state,
                            dot: dot, at: now)
                    }
                } else {
                    let rid = Self.metadataID(conflict.field) ?? registerID(field: conflict.field, item: id)
                    let versions = old.registers[rid] ?? []
                    var payload: FieldPayload
                    var tombstone = false
                    switch resolution {
                    case .keep(let n):
                        _ = try Self.side(n, of: conflict)
                        let v = versions[n - 1]
                        payload = try self.open(v, item: id, register: rid)
                        tombstone = v.isTombstone
                    case .value(let text):
                        guard !text.isEmpty else { throw CofferError(.usage, "the new value is empty") }
                        let shown = Register.shown(versions)!
                        let p = try self.open(shown, item: id, register: rid)
                        var value = text
                        if rid == .name { value = try Vault.normalizeName(text) }
                        if rid == .expires {
                            guard let d = Day.parseExpiry(text) else {
                                throw CofferError(.usage, "invalid expiry '\(text)'", hint: "use YYYY-MM-DD or a span such as 30d")
                            }
                            value = d.description
                        }
                        if rid == .type, ItemType(rawValue: text) == nil {
                            throw CofferError(.usage, "unknown item type '\(text)'")
                        }
                        payload = FieldPayload(name: p.name, value: Array(value.utf8), isSecret: p.isSecret)
                    }
                    if rid == .name && !tombstone {
                        let newName = payload.text
                        let others = try Queries.itemIDs(db, nameHash: KeyHierarchy.nameHash(newName, nameKey: keys.nameIndex)).filter { $0 != id }
                        guard others.isEmpty else {
                            throw CofferError(
                                .duplicateName, "an item named '\(newName)' already exists",
                                remedy: .init(.chooseAnotherNameForConflict, "choose another name", item: itemName))
                        }
                        result.item = newName
                    }
                    var changes = [Change(register: rid, payload: payload, tombstone: tombstone)]
                    if !(old.registers[.deleted] ?? []).filter({ !$0.isTombstone }).isEmpty {
                        // Like any edit, settling a field keeps an item that
                        // was deleted concurrently.
                        changes.append(Change(register: .deleted, payload: FieldPayload(name: "@deleted", value: [], isSecret: false), tombstone: true))
                    }
                    apply(changes, to: &state, dot: try identity.nextDot(db, item: id, policy: oldRow.policy, mac: mac), at: now)
                    result.value = (tombstone || payload.isSecret) ? nil : payload.text
                }
                let row = try derivedRow(for: state, policy: oldRow.policy, createdAt: oldRow.createdAt, updatedAt: now)
                try save(db, row: row, old: old, new: state, now: now, mac: mac)
                return result
            }
        }
    }

    static func side(_ n: Int, of c: VaultConflict) throws(CofferError) -> VaultConflict.Side {
        guard n >= 1, n <= c.sides.count else {
            throw CofferError(
                .usage, "side number \(n) is out of range: field \(c.field) of '\(c.item)' has sides 1 to \(c.sides.count)",
                remedy: .init(.seeConflictSides, "see the sides of the conflict", item: c.item, field: c.field), argument: "keep")
        }
        return c.sides[n - 1]
    }

    static func metadataID(_ field: String) -> RegisterID? {
        Vault.metadataRegisters.first { $0.1 == field }?.0
    }
}
