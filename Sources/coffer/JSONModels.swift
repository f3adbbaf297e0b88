import CofferKit
import CofferSync
import Foundation

/// JSON shapes of `--json` output. Each has a schema in Schemas/; change
/// them only compatibly (add optional keys) or with a schema version bump.
struct ItemJSON: Encodable {
    struct FieldJSON: Encodable {
        var name: String
        var value: String?
        var secret: Bool
    }
    struct ConflictJSON: Encodable {
        struct Side: Encodable {
            var number: Int
            var value: String?
            var shown: Bool
            var writtenAt: Date
            var replica: String
        }
        var field: String
        var sides: [Side]
    }
    var id: String
    var name: String
    var type: String
    var fields: [FieldJSON]
    var tags: [String]
    @NullEncoded var source: String?
    @NullEncoded var expires: String?
    var expired: Bool
    var policy: String
    var createdAt: Date
    var updatedAt: Date
    var vector: [String: UInt64]
    var conflicts: [ConflictJSON]
    var deleteConflict: Bool

    init(_ item: Item, showSecrets: Bool = true) {
        id = item.id.hex
        name = item.name
        type = item.type.rawValue
        // An attachment's bytes are not text: read them with `get --field F --out FILE`.
        fields = item.fields.map { FieldJSON(name: $0.name, value: ($0.isFile || ($0.isSecret && !showSecrets)) ? nil : $0.value, secret: $0.isSecret) }
        tags = item.tags
        source = item.source
        expires = item.expires?.description
        expired = item.isExpired()
        policy = item.policy.rawValue
        createdAt = item.createdAt
        updatedAt = item.updatedAt
        vector = Dictionary(uniqueKeysWithValues: item.vector.entries.map { ($0.replica.hex, $0.counter) })
        conflicts = item.conflicts.map { c in
            ConflictJSON(
                field: c.field,
                sides: c.sides.map {
                    .init(
                        number: $0.number, value: (c.isSecret && !showSecrets) ? nil : $0.value, shown: $0.isShown, writtenAt: $0.writtenAt,
                        replica: $0.replica.hex)
                })
        }
        deleteConflict = item.hasDeleteConflict
    }

    // Encode optionals as explicit nulls so every key is always present.
}

struct FieldValueJSON: Encodable {
    var name: String
    var field: String
    var value: String
    var secret: Bool
}

struct SummaryJSON: Encodable {
    var id: String
    var name: String
    var type: String
    var tags: [String]
    @NullEncoded var source: String?
    @NullEncoded var expires: String?
    var expired: Bool
    var policy: String
    var conflict: Bool
    var updatedAt: Date

    init(_ s: ItemSummary) {
        id = s.id.hex
        name = s.name
        type = s.type.rawValue
        tags = s.tags
        source = s.source
        expires = s.expires?.description
        expired = s.expires.map { $0 < Day.today } ?? false
        policy = s.policy.rawValue
        conflict = s.hasConflict
        updatedAt = s.updatedAt
    }

}

struct HistoryJSON: Encodable {
    var field: String
    @NullEncoded var value: String?
    var secret: Bool
    var removed: Bool
    var current: Bool
    var writtenAt: Date
    var replica: String
    var counter: UInt64
    /// The member who wrote the version (shared vaults); left out otherwise.
    var member: String?
}

/// An optional member of a `--json` model that is written as `null` when
/// absent: the JSON Schemas in Schemas/ list such keys as required, and a
/// synthesized `Encodable` would leave them out. With it a model is a plain
/// `Encodable` struct, not a hand-written `encode(to:)`.
// swift-format-ignore: UseSynthesizedInitializer
@propertyWrapper
struct NullEncoded<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    // The containing models' memberwise initializers take a plain optional
    // only through an explicit init(wrappedValue:) (hence the ignore above).
    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}
