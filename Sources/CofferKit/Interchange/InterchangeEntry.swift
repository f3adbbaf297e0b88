import CofferSync
import Foundation

/// One credential read from another tool's file (or written to one): the
/// neutral model every format reader in CofferInterop produces and that
/// ``Vault/importEntries(_:options:progress:)`` stores
/// (docs/import-export.md).
public struct InterchangeEntry: Sendable, Equatable {
    /// The item name as the source gives it: a `/`-separated path (folder
    /// or group path, then the entry's title). Cleaned on import (see
    /// ``InterchangeEntry/cleanName(_:)``).
    public var name: String
    public var type: ItemType
    /// Fields in the source's order; names unique.
    public var fields: [Field]
    public var tags: [String]
    public var source: String?
    public var expires: Day?
    public var policy: SyncPolicy
    /// Variable-name overrides for `coffer env` (field → variable).
    public var env: [String: String]
    /// Earlier versions of the fields, oldest first, each the whole set of
    /// fields as it was then (KeePass entry history, Coffer JSON history).
    public var history: [InterchangeVersion]
    /// Where the entry is in its file, for messages: `line 12`, `entry 3`.
    public var origin: String

    public init(
        name: String, type: ItemType, fields: [Field] = [], tags: [String] = [], source: String? = nil,
        expires: Day? = nil, policy: SyncPolicy = .sync, env: [String: String] = [:],
        history: [InterchangeVersion] = [], origin: String = ""
    ) {
        self.name = name
        self.type = type
        self.fields = fields
        self.tags = tags
        self.source = source
        self.expires = expires
        self.policy = policy
        self.env = env
        self.history = history
        self.origin = origin
    }

    /// Adds a field unless its value is empty; a name already used gets
    /// `2`, `3`… appended (`url`, `url2`, `url3`). Returns the name used.
    @discardableResult
    public mutating func append(_ name: String, _ value: String, secret: Bool, keepEmpty: Bool = false) -> String? {
        guard keepEmpty || !value.isEmpty else { return nil }
        let base = InterchangeEntry.cleanFieldName(name)
        var candidate = base
        var n = 2
        while fields.contains(where: { $0.name == candidate }) {
            candidate = base + String(n)
            n += 1
        }
        fields.append(Field(name: candidate, value: value, isSecret: secret))
        return candidate
    }

    /// A field name Coffer accepts: no leading `@`, no `=`, no control
    /// characters (replaced by `_`); an empty name becomes `field`.
    public static func cleanFieldName(_ raw: String) -> String {
        // Fast path (most names): printable ASCII, nothing to change.
        if let first = raw.utf8.first, let last = raw.utf8.last, first != UInt8(ascii: "@"), first != 0x20, last != 0x20,
            raw.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "=") })
        {
            return raw
        }
        var out = ""
        for u in raw.unicodeScalars {
            if u == "=" || u.properties.generalCategory == .control { out += "_" } else { out.unicodeScalars.append(u) }
        }
        while out.hasPrefix("@") { out.removeFirst() }
        out = out.trimmingCharacters(in: .whitespaces)
        return out.isEmpty ? "field" : out
    }

    /// An item name Coffer accepts, as close to `raw` as possible: control
    /// characters become spaces, empty path parts are dropped, a leading
    /// `id:` or `.coffer/` gets a `_` in front, an empty name is `untitled`.
    public static func cleanName(_ raw: String) -> String {
        var name: String
        if raw.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            // Printable ASCII: already NFC, no control characters, and the
            // only white space is ' ' (no Foundation look-up per part).
            name = raw.utf8.split(separator: UInt8(ascii: "/")).filter { $0.contains { $0 != 0x20 } }.map { String(Substring($0)) }
                .joined(separator: "/")
        } else {
            var text = ""
            for u in raw.precomposedStringWithCanonicalMapping.unicodeScalars {
                if u.properties.generalCategory == .control { text += " " } else { text.unicodeScalars.append(u) }
            }
            name = text.split(separator: "/").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.joined(separator: "/")
        }
        if name.isEmpty { name = "untitled" }
        if name.hasPrefix("id:") || Vault.isReserved(name) { name = "_" + name }
        while name.utf8.count > 1000 { name.removeLast() }
        return name
    }
}

/// An earlier version of an entry's fields.
public struct InterchangeVersion: Sendable, Equatable {
    public var fields: [Field]
    /// When it was written, when the source says.
    public var writtenAt: Date?

    public init(fields: [Field], writtenAt: Date? = nil) {
        self.fields = fields
        self.writtenAt = writtenAt
    }
}

/// What to do with an entry whose name is already taken by a different item.
public enum ImportConflictPolicy: String, Sendable, CaseIterable {
    /// Leave the existing item; count the entry as skipped.
    case skip
    /// Replace the existing item's fields with the entry's (one edit; the
    /// old values stay in its history).
    case overwrite
    /// Store the entry beside it as `NAME (2)`, `NAME (3)`… (the default).
    case keepBoth = "keep-both"
}

public struct InterchangeOptions: Sendable {
    /// Put every name under this path (`imported/bitwarden`).
    public var prefix: String?
    public var onConflict: ImportConflictPolicy
    /// Plan only: report what would happen, change nothing.
    public var dryRun: Bool

    public init(prefix: String? = nil, onConflict: ImportConflictPolicy = .keepBoth, dryRun: Bool = false) {
        self.prefix = prefix
        self.onConflict = onConflict
        self.dryRun = dryRun
    }
}

/// What an import did (or, in a dry run, would do). Names only, never values.
public struct InterchangeReport: Sendable, Equatable {
    public enum Action: String, Sendable {
        /// A new item.
        case added
        /// An existing item edited (`--on-conflict overwrite`).
        case overwritten
        /// An identical item is already there.
        case identical
        /// A different item has the name and `--on-conflict skip` was given.
        case skipped
    }

    public struct Line: Sendable, Equatable {
        /// The name the entry had in its file (after the prefix).
        public var entry: String
        /// The vault item it became or matched.
        public var name: String
        public var action: Action
        public var origin: String
    }

    public var lines: [Line] = []
    public var dryRun: Bool

    public init(dryRun: Bool) { self.dryRun = dryRun }

    public func count(_ a: Action) -> Int { lines.filter { $0.action == a }.count }
}
