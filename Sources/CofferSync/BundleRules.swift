import CofferCrypto

/// The validation rules a bundle must keep (docs/bundle-format.md
/// §Validation rules, docs/sync.md §Hostile bundles). A bundle that breaks
/// any of them is refused whole, before anything is merged: it was
/// written by a buggy or hostile holder of the vault key, and merging part
/// of it could make replicas diverge.
///
/// The rules checked here need only the bundle itself (its header and its
/// records); ``BundleReader`` applies them to every record it returns.
/// The rules that need the receiving vault (``localReplicaBound``,
/// ``futureBundle``, ``mutualSupersession``) are applied by the importer.
public enum BundleRule: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Every counter (dots, vector entries, summary and since entries) is
    /// between 1 and 2^53.
    case counterRange = "counter-range"
    /// Every time (the bundle's creation, each version's write) is between
    /// 0 and 2^53 milliseconds since 1970.
    case timeRange = "time-range"
    /// A version's vector holds its own dot exactly:
    /// `vector[dot.replica] == dot.counter`.
    case exactDot = "exact-dot"
    /// No dot exceeds what the exporter's summary claims for its replica
    /// (for every replica the summary names), and no dot or vector entry
    /// of the exporter itself exceeds its own entry.
    case summaryBound = "summary-bound"
    /// Within one item record, the versions of one register are concurrent:
    /// none contains another's dot (a bundle carries only current versions,
    /// and a version never supersedes one it did not see).
    case concurrentVersions = "concurrent-versions"
    /// No version was written more than ``BundleValidation/clockSkew``
    /// after the bundle that carries it was created.
    case writtenAfterBundle = "written-after-bundle"
    /// (Receiver) The bundle was not created more than
    /// ``BundleValidation/clockSkew`` after the receiving machine's clock.
    case futureBundle = "future-bundle"
    /// (Receiver) No version claims more writes of the receiving replica
    /// than it made or than the exporter's summary says it saw.
    case localReplicaBound = "local-replica-bound"
    /// (Receiver) An incoming version and a held version never contain
    /// each other's dots (both would be dropped).
    case mutualSupersession = "mutual-supersession"

    /// (Payload) A payload's name matches its register: a metadata
    /// register (ids 1–7) holds its own `@name`, any other id is the keyed
    /// hash of the item id and the payload's name; ids 0 and 8–255 are
    /// unknown metadata and refused.
    case registerName = "register-name"
    /// (Payload) A value is UTF-8 text.
    case textValue = "text-value"
    /// (Payload) A tombstone's value is empty.
    case emptyTombstone = "empty-tombstone"
    /// (Member) A sealed key (format 5) names the bundle's vault and key
    /// epoch in its sealed prefix.
    case sealedKeyBinding = "sealed-key-binding"
    /// (Signed) A format-6 bundle's Ed25519 signature, after its FINAL
    /// chunk, verifies under the publisher key in its header.
    case signature = "signature"
    /// (Signed, receiver) The publisher is a read-write member as the
    /// receiver holds the membership after merging the bundle.
    case signerMember = "signer-member"
    /// (Signed) The publication counter is between 1 and 2^53 and (receiver)
    /// above the last one the receiver accepted from that member.
    case publicationCounter = "publication-counter"
    /// (Signed, receiver) The bundle's replica id is not bound to another
    /// member's key.
    case replicaBinding = "replica-binding"
    /// (Receiver) A vault with members accepts only signed bundles.
    case unsignedInSharedVault = "unsigned-in-shared-vault"

    public var description: String { rawValue }

    /// One line saying what the rule requires, for error messages.
    public var summary: String {
        switch self {
        case .counterRange: "every counter must be between 1 and 2^53"
        case .timeRange: "every time must be between 0 and 2^53 ms"
        case .exactDot: "a version's vector must hold its own dot exactly"
        case .summaryBound: "no version may exceed the exporter's summary"
        case .concurrentVersions: "the versions of one field in a record must be concurrent"
        case .writtenAfterBundle: "no version may be written more than a day after its bundle"
        case .futureBundle: "a bundle may not be dated more than a day ahead of this machine's clock"
        case .localReplicaBound: "no version may claim writes of this replica that it never made"
        case .mutualSupersession: "two versions may not each contain the other's dot"
        case .registerName: "a payload's name must match its register id"
        case .textValue: "values must be UTF-8 text"
        case .emptyTombstone: "a tombstone's value must be empty"
        case .sealedKeyBinding: "a sealed key must name the bundle's vault and key epoch"
        case .signature: "a signed bundle's signature must verify under its publisher's key"
        case .signerMember: "a bundle must be signed by a read-write member of the vault"
        case .publicationCounter: "a member's files must not go back to lower publication counters"
        case .replicaBinding: "a replica id belongs to the first member who signed a bundle for it"
        case .unsignedInSharedVault: "a shared vault accepts only bundles signed by a member"
        }
    }
}

/// The checks behind ``BundleRule``.
public enum BundleValidation {
    /// The largest counter a bundle may carry: 2^53 (every counter is then
    /// exact in a double and far from Int64's range).
    public static let maxCounter: UInt64 = 1 << 53
    /// The largest time (ms since 1970) a bundle may carry.
    public static let maxTime: Int64 = 1 << 53
    /// How far a write time may lie after its bundle's creation time, and a
    /// bundle's creation time after the receiver's clock: one day.
    public static let clockSkew: Int64 = 86_400_000

    /// Checks the header's own rules: counter and time ranges.
    public static func check(header h: BundleHeader) throws(BundleError) {
        for e in h.summary.entries where e.counter > maxCounter {
            throw .ruleBroken(.counterRange, "the summary claims counter \(e.counter) for replica \(e.replica.hex.prefix(8))")
        }
        for e in h.since.entries where e.counter > maxCounter {
            throw .ruleBroken(.counterRange, "the since-vector holds counter \(e.counter) for replica \(e.replica.hex.prefix(8))")
        }
        guard h.createdAt >= 0, h.createdAt <= maxTime else {
            throw .ruleBroken(.timeRange, "the bundle's creation time is \(h.createdAt)")
        }
    }

    /// Checks one decoded item record against the header.
    public static func check(record state: ItemState, header h: BundleHeader) throws(BundleError) {
        var item: Substring { state.id.hex.prefix(8) } // only for messages
        for (rid, versions) in state.registers {
            for v in versions {
                let dot = v.dot
                guard dot.counter >= 1, dot.counter <= maxCounter else {
                    throw .ruleBroken(.counterRange, "item \(item)… holds a version with counter \(dot.counter)")
                }
                for e in v.vector.entries where e.counter > maxCounter {
                    throw .ruleBroken(.counterRange, "item \(item)… holds a vector entry \(e.counter) for replica \(e.replica.hex.prefix(8))")
                }
                guard v.vector[dot.replica] == dot.counter else {
                    throw .ruleBroken(
                        .exactDot,
                        "item \(item)… holds version \(dot) whose vector has \(v.vector[dot.replica]) for its own replica")
                }
                guard v.writtenAt >= 0, v.writtenAt <= maxTime else {
                    throw .ruleBroken(.timeRange, "item \(item)… holds a version written at \(v.writtenAt)")
                }
                guard v.writtenAt <= h.createdAt &+ clockSkew else {
                    throw .ruleBroken(
                        .writtenAfterBundle,
                        "item \(item)… holds a version written at \(v.writtenAt) ms, more than a day after the bundle (\(h.createdAt) ms)")
                }
                // The dot, for every replica the summary names, and every
                // entry of the exporter's own. Another replica's vector
                // entry may exceed the summary: an honest exporter holds
                // such a claim once it merged a key holder's forged one
                // (the replica it names takes a new id when it sees it),
                // and refusing it would fork every replica that did.
                for e in v.vector.entries {
                    let claimed = h.summary[e.replica]
                    let bounded = e.replica == h.replicaID || (e.replica == dot.replica && claimed > 0)
                    if bounded && e.counter > claimed {
                        throw .ruleBroken(
                            .summaryBound,
                            "item \(item)… holds \(e.replica.hex.prefix(8)):\(e.counter) but the exporter's summary claims \(claimed)")
                    }
                }
            }
            if versions.count > 1 {
                // Some other version contains a's dot (r, c) when the
                // largest entry for r among the *other* versions is ≥ c:
                // keep the two largest entries per replica (linear, so a
                // record of many versions cannot stall the reader).
                var top: [ReplicaID: (first: UInt64, index: Int, second: UInt64)] = [:]
                for (i, b) in versions.enumerated() {
                    for e in b.vector.entries {
                        var t = top[e.replica] ?? (0, -1, 0)
                        if e.counter > t.first {
                            t = (e.counter, i, t.first)
                        } else if e.counter > t.second {
                            t.second = e.counter
                        }
                        top[e.replica] = t
                    }
                }
                for (i, a) in versions.enumerated() {
                    guard let t = top[a.dot.replica] else { continue }
                    let others = t.index == i ? t.second : t.first
                    if others >= a.dot.counter, let b = versions.enumerated().first(where: { $0.offset != i && $0.element.vector.contains(a.dot) })?.element {
                        throw .ruleBroken(
                            .concurrentVersions,
                            "item \(item)…, register \(rid.description.prefix(8)): version \(b.dot) supersedes \(a.dot) in the same record")
                    }
                }
            }
        }
    }

    /// The metadata registers and the names their payloads carry.
    public static let metadataNames: [RegisterID: String] = [
        .name: "@name", .type: "@type", .tags: "@tags", .source: "@source", .expires: "@expires",
        .deleted: "@deleted", .env: "@env",
    ]

    /// Checks a decrypted payload against the version and register that
    /// carry it (needs the field-id key, so importers run it after
    /// decrypting each version they store).
    public static func check(
        payload p: FieldPayload, version v: FieldVersion, register rid: RegisterID, item: ItemID, fieldIDKey: SecretBytes
    ) throws(BundleError) {
        // Built only for an error: formatting ids costs more than the checks.
        func place() -> String { "item \(item.hex.prefix(8))…, version \(v.dot)" }
        if rid.isMetadata {
            guard let expected = metadataNames[rid] else {
                throw .ruleBroken(.registerName, "\(place()) uses the unknown metadata register \(rid.low)")
            }
            guard p.name == expected else {
                throw .ruleBroken(.registerName, "\(place()): metadata register \(rid.low) holds a payload named \(p.name.debugDescription)")
            }
        } else if KeyHierarchy.registerID(field: p.name, item: item, fieldIDKey: fieldIDKey) != rid {
            throw .ruleBroken(.registerName, "\(place()): the register id is not the one of the field name in the payload")
        }
        if v.isTombstone && !p.value.isEmpty {
            throw .ruleBroken(.emptyTombstone, "\(place()) is a tombstone with a \(p.value.count)-byte value")
        }
        if p.isFile {
            // An attachment (flag bit 2) holds a file's bytes; metadata never does.
            guard !rid.isMetadata else {
                throw .ruleBroken(.textValue, "\(place()): metadata register \(rid.low) is marked as an attachment")
            }
        } else {
            guard String(validating: p.value, as: UTF8.self) != nil else {
                throw .ruleBroken(.textValue, "\(place()) holds a value that is not UTF-8")
            }
        }
    }

    /// Checks a summary file's counters.
    public static func check(summaryFile s: BundleSummaryFile) throws(BundleError) {
        for e in s.vector.entries where e.counter > maxCounter {
            throw .ruleBroken(.counterRange, "the summary claims counter \(e.counter) for replica \(e.replica.hex.prefix(8))")
        }
    }

    /// The summary a receiver records after merging a bundle: the header's
    /// claims, except that a claim for a replica other than the exporter is
    /// lowered to the highest counter of that replica the bundle shows
    /// (`evidence`: every version's vector entries, and for a delta its
    /// since-vector). A summary entry the records do not back cannot make
    /// the receiver skip that replica's writes (docs/sync.md §Hostile
    /// bundles). Lowering a claim is always safe: the receiver only
    /// re-merges versions it already holds.
    public static func backedSummary(header h: BundleHeader, evidence: [ReplicaID: UInt64]) -> VersionVector {
        var out = h.summary
        for e in h.summary.entries where e.replica != h.replicaID {
            let backed = max(evidence[e.replica] ?? 0, h.since[e.replica])
            if backed < e.counter { out[e.replica] = backed }
        }
        return out
    }
}
