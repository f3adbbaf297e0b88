import ArgumentParser
import CofferKit
import CofferSync
import Foundation

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a bundle's clear header (no passphrase needed).",
        discussion: """
            Prints the format version, vault id, exporting replica, kind, creation time, record \
            count and vectors, and for a signed bundle (format 6) its publisher's Ed25519 key and \
            publication counter. Nothing here is authenticated until the bundle is imported, and no \
            credential is shown: items are inside the encrypted stream. --json output follows \
            Schemas/inspect.schema.json.
            """)

    @Argument(help: ArgumentHelp("A bundle file.", valueName: "file"))
    var file: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let info = try Vault.inspectBundle(at: file)
        let j = InspectJSON(info)
        if json {
            try Output.json(j)
            return
        }
        Output.out("bundle:     \(file)")
        Output.out("format:     \(j.formatVersion)")
        Output.out("kind:       \(j.kind)")
        Output.out("vault:      \(j.vault)")
        Output.out("replica:    \(j.replica)")
        Output.out("created:    \(ISO8601.string(j.createdAt))")
        Output.out("records:    \(j.records.map(String.init) ?? "unknown")")
        Output.out("size:       \(j.bytes) bytes")
        Output.out("kdf:        argon2id, \(j.kdf.memoryKiB) KiB, \(j.kdf.iterations) iterations, \(j.kdf.parallelism) lanes")
        Output.out("summary:    \(Self.text(j.summary))")
        if info.header.kind == .delta { Output.out("since:      \(Self.text(j.since))") }
        if let p = j.passphraseChange {
            Output.out("passphrase: changed on \(p.changedBy.prefix(8)) at \(ISO8601.string(p.changedAt)) (changes \(Self.text(p.vector)))")
        }
        if let k = j.keyEpoch {
            Output.out("key epoch:  \(k.number), rekeyed on \(k.rekeyedBy.prefix(8)) at \(ISO8601.string(k.rekeyedAt))")
        }
        if let n = j.sealedKeys { Output.out("sealed to:  \(n) member\(n == 1 ? "" : "s") (docs/sharing.md)") }
        if let key = j.publisher, let counter = j.publication {
            Output.out("publisher:  \(key) (Ed25519 key of the member who signed it; the signature is verified on import)")
            Output.out("published:  publication counter \(counter)")
        }
        Output.err("coffer: note: the header is not authenticated until the bundle is imported")
    }

    static func text(_ v: [String: UInt64]) -> String {
        v.isEmpty ? "(empty)" : v.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ")
    }
}

/// `coffer inspect --json` (Schemas/inspect.schema.json).
struct InspectJSON: Encodable {
    struct KDF: Encodable {
        var algorithm = "argon2id"
        var memoryKiB: UInt32
        var iterations: UInt32
        var parallelism: UInt32
    }
    var path: String
    var formatVersion: Int
    var kind: String
    var vault: String
    var replica: String
    var createdAt: Date
    var records: UInt64?
    var bytes: Int
    var kdf: KDF
    var summary: [String: UInt64]
    var since: [String: UInt64]
    var authenticated = false
    /// Format 2: the passphrase change that made the wrapped key.
    struct PassphraseChange: Encodable {
        var changedBy: String
        var changedAt: Date
        var vector: [String: UInt64]
    }
    var passphraseChange: PassphraseChange?
    /// Format 3: the rekey that made the bundle's master key.
    struct KeyEpoch: Encodable {
        var number: UInt64
        var rekeyedBy: String
        var rekeyedAt: Date
    }
    var keyEpoch: KeyEpoch?
    /// Format 5: how many members the master key is sealed to.
    var sealedKeys: Int?
    /// Format 6: the signer's Ed25519 public key (hex) and its publication
    /// counter, as the clear header says (not verified here).
    var publisher: String?
    var publication: UInt64?

    init(_ info: BundleInfo) {
        let h = info.header
        path = info.path
        formatVersion = info.formatVersion
        kind = h.kind.name
        vault = h.vaultID.hex
        replica = h.replicaID.hex
        createdAt = Date(timeIntervalSince1970: Double(h.createdAt) / 1000)
        records = h.recordCount
        bytes = info.fileSize
        kdf = KDF(memoryKiB: h.kdf.memoryKiB, iterations: h.kdf.iterations, parallelism: h.kdf.parallelism)
        summary = Dictionary(uniqueKeysWithValues: h.summary.entries.map { ($0.replica.hex, $0.counter) })
        since = Dictionary(uniqueKeysWithValues: h.since.entries.map { ($0.replica.hex, $0.counter) })
        if let by = h.wrapping.changedBy {
            passphraseChange = PassphraseChange(
                changedBy: by.hex, changedAt: Date(timeIntervalSince1970: Double(h.wrapping.changedAt) / 1000),
                vector: Dictionary(uniqueKeysWithValues: h.wrapping.vector.entries.map { ($0.replica.hex, $0.counter) }))
        }
        if let by = h.keyEpoch.rekeyedBy {
            keyEpoch = KeyEpoch(number: h.keyEpoch.number, rekeyedBy: by.hex, rekeyedAt: Date(timeIntervalSince1970: Double(h.keyEpoch.rekeyedAt) / 1000))
        }
        if !h.sealedKeys.isEmpty { sealedKeys = h.sealedKeys.count }
        if let key = h.publisher {
            publisher = key.map { String(format: "%02x", $0) }.joined()
            publication = h.publication
        }
    }

    enum CodingKeys: String, CodingKey {
        case path, formatVersion, kind, vault, replica, createdAt, records, bytes, kdf, summary, since, authenticated, passphraseChange, keyEpoch, sealedKeys,
            publisher,
            publication
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(formatVersion, forKey: .formatVersion)
        try c.encode(kind, forKey: .kind)
        try c.encode(vault, forKey: .vault)
        try c.encode(replica, forKey: .replica)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(records, forKey: .records)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(kdf, forKey: .kdf)
        try c.encode(summary, forKey: .summary)
        try c.encode(since, forKey: .since)
        try c.encode(authenticated, forKey: .authenticated)
        try c.encodeIfPresent(passphraseChange, forKey: .passphraseChange)
        try c.encodeIfPresent(keyEpoch, forKey: .keyEpoch)
        try c.encodeIfPresent(sealedKeys, forKey: .sealedKeys)
        try c.encodeIfPresent(publisher, forKey: .publisher)
        try c.encodeIfPresent(publication, forKey: .publication)
    }
}
