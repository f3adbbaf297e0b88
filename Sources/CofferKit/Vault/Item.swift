import CofferSync
import Foundation

/// One named value of an item: UTF-8 text, or for an attachment
/// (``isFile``) a file's bytes.
public struct Field: Sendable, Equatable, Hashable {
    public var name: String
    /// The value's bytes: UTF-8 text, or a file's bytes when ``isFile``.
    public var bytes: [UInt8]
    public var isSecret: Bool
    /// An attachment (`coffer attach`): binary-safe, never printed to a
    /// terminal, listed by `coffer show` with its size.
    public var isFile: Bool

    public init(name: String, value: String, isSecret: Bool) {
        self.name = name
        self.bytes = Array(value.utf8)
        self.isSecret = isSecret
        self.isFile = false
    }

    public init(name: String, bytes: [UInt8], isSecret: Bool, isFile: Bool) {
        self.name = name
        self.bytes = bytes
        self.isSecret = isSecret
        self.isFile = isFile
    }

    /// The value as text (an attachment's bytes that are not UTF-8 show
    /// as U+FFFD; read those through ``bytes``).
    public var value: String {
        get { String(decoding: bytes, as: UTF8.self) }
        set { bytes = Array(newValue.utf8) }
    }

    /// The largest value a field may hold (an attachment's size limit).
    public static let maxValueBytes = 16 * 1024 * 1024
    /// The largest total of an item's values: with every field in a two-way
    /// conflict an item still fits a bundle record (64 MiB).
    public static let maxItemBytes = 28 * 1024 * 1024
}

/// A calendar day (`YYYY-MM-DD`), the resolution of expiry dates.
public struct Day: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init?(year: Int, month: Int, day: Int) {
        var c = DateComponents()
        c.year = year
        c.month = month
        c.day = day
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
            let date = Day.calendar.date(from: c),
            Day.calendar.component(.day, from: date) == day
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// The day `date` falls on, in UTC.
    public init(_ date: Date) {
        let c = Day.calendar.dateComponents([.year, .month, .day], from: date)
        year = c.year!
        month = c.month!
        day = c.day!
    }

    public static var today: Day { Day(Date()) }

    static let calendar: Calendar = {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "UTC")!
        return c
    }()

    /// Midnight UTC at the start of this day.
    public var date: Date {
        Day.calendar.date(from: DateComponents(year: year, month: month, day: day))!
    }

    public func adding(days: Int) -> Day { Day(date.addingTimeInterval(Double(days) * 86400)) }

    public var description: String {
        String(format: "%04d-%02d-%02d", year, month, day)
    }

    public static func < (a: Day, b: Day) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    /// Parses an expiry as given on the command line: `YYYY-MM-DD`, or a
    /// span from today: `30d`, `6w`, `3m` (30-day months), `1y` (365 days).
    public static func parseExpiry(_ text: String, today: Day = .today) -> Day? {
        if let d = Day(text) { return d }
        guard let days = parseSpan(text) else { return nil }
        return today.adding(days: days)
    }

    /// Parses a span such as `30d`, `6w`, `3m`, `1y` into days.
    public static func parseSpan(_ text: String) -> Int? {
        guard let unit = text.last, let n = Int(text.dropLast()), n >= 0, n <= 36500 else { return nil }
        switch unit {
        case "d": return n
        case "w": return n * 7
        case "m": return n * 30
        case "y": return n * 365
        default: return nil
        }
    }
}

/// A side of a conflict: one of several concurrent versions of a field.
public struct ConflictSide: Sendable, Equatable {
    /// 1-based number used by `coffer resolve --keep N`.
    public var number: Int
    public var value: String?
    public var isShown: Bool
    public var writtenAt: Date
    public var replica: ReplicaID
    public var dot: Dot
}

/// A field (or the name, type, …) with concurrent versions.
public struct FieldConflict: Sendable, Equatable {
    /// The field's name (`@name` for the item name, `@tags`, …).
    public var field: String
    public var isSecret: Bool
    public var sides: [ConflictSide]
}

/// A decrypted credential.
public struct Item: Sendable, Equatable {
    public var id: ItemID
    public var name: String
    public var type: ItemType
    /// Fields in display order: the type's declared fields first, then the
    /// rest by name.
    public var fields: [Field]
    public var tags: [String]
    public var source: String?
    public var expires: Day?
    public var policy: SyncPolicy
    /// Variable-name overrides for `coffer env`: field → variable.
    public var env: [String: String]
    public var createdAt: Date
    public var updatedAt: Date
    /// The item's version vector (pointwise max of its fields').
    public var vector: VersionVector
    /// Fields with concurrent versions.
    public var conflicts: [FieldConflict]
    /// Deleted on one replica while edited concurrently on another.
    public var hasDeleteConflict: Bool
    /// The replica that made the latest shown write.
    public var lastWrittenBy: ReplicaID? = nil
    /// Guarded variable names (``EnvNaming/dangerousReason(_:)``) the
    /// user allowed this item to set with `coffer env` (`coffer edit NAME
    /// --allow-env-var VAR`). Kept in the item's `@env` register, so it is
    /// encrypted and syncs with the mapping.
    public var allowedEnvNames: Set<String> = []

    /// The field `coffer get NAME` prints: the type's primary field, or for
    /// `custom` items the field `value` (what ``Coffer/Kind/generic(fields:)``
    /// stores), else the first secret field, else the first field.
    public var primaryField: Field? {
        if let f = field(type.primaryFieldName ?? "value") { return f }
        return fields.first(where: \.isSecret) ?? fields.first
    }

    public func field(_ name: String) -> Field? { fields.first { $0.name == name } }

    public func isExpired(today: Day = .today) -> Bool {
        guard let e = expires else { return false }
        return e < today
    }
}

/// What `coffer ls` shows without decrypting any field value.
public struct ItemSummary: Sendable, Equatable {
    public var id: ItemID
    public var name: String
    public var type: ItemType
    public var tags: [String]
    public var source: String?
    public var expires: Day?
    public var policy: SyncPolicy
    public var hasConflict: Bool
    public var updatedAt: Date
    /// The shown `username` field, when the item has one.
    public var username: String?
    /// The shown `url` field, when the item has one.
    public var url: String?

    public init(
        id: ItemID, name: String, type: ItemType, tags: [String], source: String?, expires: Day?, policy: SyncPolicy,
        hasConflict: Bool, updatedAt: Date, username: String? = nil, url: String? = nil
    ) {
        self.id = id
        self.name = name
        self.type = type
        self.tags = tags
        self.source = source
        self.expires = expires
        self.policy = policy
        self.hasConflict = hasConflict
        self.updatedAt = updatedAt
        self.username = username
        self.url = url
    }
}

/// A new item to store.
public struct ItemDraft: Sendable {
    public var name: String
    public var type: ItemType
    public var fields: [Field]
    public var tags: [String]
    public var source: String?
    public var expires: Day?
    public var policy: SyncPolicy

    public init(
        name: String, type: ItemType, fields: [Field] = [], tags: [String] = [], source: String? = nil,
        expires: Day? = nil, policy: SyncPolicy = .sync
    ) {
        self.name = name
        self.type = type
        self.fields = fields
        self.tags = tags
        self.source = source
        self.expires = expires
        self.policy = policy
    }
}

/// Changes to an existing item. Nil means "leave as it is".
public struct ItemEdit: Sendable {
    public var rename: String?
    public var setFields: [Field] = []
    public var unsetFields: [String] = []
    public var addTags: [String] = []
    public var removeTags: [String] = []
    public var source: String??
    public var expires: Day??
    public var type: ItemType?
    public var policy: SyncPolicy?
    public var env: [String: String]?
    /// The new set of guarded variable names the item may set
    /// (``Item/allowedEnvNames``); nil leaves it as it is.
    public var allowedEnvNames: Set<String>?

    public init() {}

    public var isEmpty: Bool {
        rename == nil && setFields.isEmpty && unsetFields.isEmpty && addTags.isEmpty && removeTags.isEmpty
            && source == nil && expires == nil && type == nil && policy == nil && env == nil && allowedEnvNames == nil
    }
}

/// One entry of `coffer history`: a write that was later superseded, or
/// the current version.
public struct HistoryEntry: Sendable, Equatable {
    public var field: String
    public var value: String?
    public var isSecret: Bool
    public var removed: Bool
    public var writtenAt: Date
    public var replica: ReplicaID
    public var counter: UInt64
    public var isCurrent: Bool
}
