import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

/// The listing cache of a shell session (docs/key-hierarchy.md, "Listing
/// cache"): the result of the last full listing — every live item's name,
/// type, tags, source, expiry, username, url, flags and last change, in
/// listing order — sealed under the listing-cache key and bound to the
/// vault id and the ``ListingStamp`` (vault MAC and SQLite change counter)
/// of the vault state it was built from. `coffer ls`, `find` and every
/// other listing serve it only while the vault's stamp is the same; a
/// cache that is missing, stale, unauthentic, from another vault, or not a
/// private file of the user is never read, and the next full listing
/// replaces it.
///
/// File `<session folder>/<session id>.listing`, mode 0600, removed with
/// its session:
/// ```
/// header = magic "CFLIST01" || vault id (16) || vault MAC (32) || u32be change counter
/// file   = header || XChaCha20-Poly1305(listing-cache key, plaintext,
///                     AD = "coffer-listing-cache-v1" || header)
/// plaintext = u32be n || n × entry || zero bytes up to a multiple of 4096
/// entry = item id (16) || u8 flags || i64be updatedAt || name || type || tags (LF-joined)
///         || [source] [expires] [username] [url]          (each text: u32be length || UTF-8)
/// flags: bit 0 conflict, bit 1 local-only, bits 2–5 source, expires, username, url present
/// ```
struct ListingCache {
    let path: String

    static let magic = Array("CFLIST01".utf8)
    static let label = Array("coffer-listing-cache-v1".utf8)
    static let suffix = ".listing"
    static let padBlock = 4096
    /// Larger caches are neither written nor read (about 600,000 items).
    static let maxFileSize = 64 << 20

    static func header(vault: VaultID, stamp: ListingStamp) -> [UInt8] {
        var w = ByteWriter(capacity: 60)
        w.bytes(magic)
        w.id(vault)
        w.bytes(stamp.mac)
        w.u32(stamp.changeCounter)
        return w.data
    }

    /// The cached listing for exactly this vault state, or nil (absent,
    /// stale, unauthentic, unreadable, not private: never an error): the
    /// base file's listing when it was built from `stamp`, else brought
    /// forward by the chain of write deltas from its state to `stamp`.
    /// `steps` is the number of deltas applied.
    func load(vault: VaultID, stamp: ListingStamp, key: SecretBytes) -> (items: [ItemSummary], steps: Int)? {
        guard let (base, items) = loadBase(vault: vault, key: key) else { return nil }
        if base == stamp { return (items, 0) }
        return Self.forward(items, from: base, to: stamp, deltas: deltaRecords(vault: vault), key: key)
    }

    /// The base file's state and listing, or nil.
    func loadBase(vault: VaultID, key: SecretBytes) -> (ListingStamp, [ItemSummary])? {
        guard let file = try? PrivateFile.read(path: path, maxSize: Self.maxFileSize) else { return nil }
        let bytes = file.bytes
        guard bytes.count > Self.headerSize, bytes[..<8].elementsEqual(Self.magic), bytes[8..<24].elementsEqual(vault.bytes) else { return nil }
        var r = ByteReader(Array(bytes[24..<Self.headerSize]))
        guard let mac = try? r.bytes(32), let counter = try? r.u32() else { return nil }
        let header = Array(bytes[..<Self.headerSize])
        guard let plain = try? AEAD.open(bytes[Self.headerSize...], key: key, associatedData: Self.label + header),
            let items = Self.decode(plain)
        else { return nil }
        return (ListingStamp(mac: mac, changeCounter: counter), items)
    }

    /// Writes the listing for this vault state, which replaces every delta;
    /// failures are ignored (the next listing reads the vault again).
    func store(_ items: [ItemSummary], vault: VaultID, stamp: ListingStamp, key: SecretBytes) {
        guard let plain = Self.encode(items) else { return }
        let header = Self.header(vault: vault, stamp: stamp)
        let file = header + AEAD.seal(plain, key: key, associatedData: Self.label + header)
        guard file.count <= Self.maxFileSize else { return }
        try? PrivateFile.replace(path: path, bytes: file)
        PrivateFile.removeIfPresent(path: deltaPath)
    }

    static let headerSize = 60

    // MARK: Deltas

    /// What one write changed in the listing: the summaries of the items
    /// it wrote that are live, and the ids of those it deleted, from the
    /// state `from` to the state `to` (docs/key-hierarchy.md, "Listing
    /// cache deltas").
    struct Delta {
        var from: ListingStamp
        var to: ListingStamp
        var upserts: [ItemSummary]
        var removed: [ItemID]
    }

    static let deltaSuffix = ".listing-delta"
    static let deltaMagic = Array("CFLDLT01".utf8)
    static let deltaLabel = Array("coffer-listing-delta-v1".utf8)
    static let deltaHeaderSize = 8 + 16 + 2 * (32 + 4)
    /// Larger delta files are not appended to (the next full listing
    /// starts a new one).
    static let maxDeltaFileSize = 4 << 20
    /// A write that changed more items than this (an import, a sync)
    /// leaves no delta: the next listing reads the vault.
    static let maxDeltaItems = 512
    /// A listing that applies this many deltas writes a new base file.
    static let compactAfter = 32

    var deltaPath: String { path + "-delta" }

    static func deltaHeader(vault: VaultID, from: ListingStamp, to: ListingStamp) -> [UInt8] {
        var w = ByteWriter(capacity: deltaHeaderSize)
        w.bytes(deltaMagic)
        w.id(vault)
        w.bytes(from.mac)
        w.u32(from.changeCounter)
        w.bytes(to.mac)
        w.u32(to.changeCounter)
        return w.data
    }

    /// Appends one write's delta; failures are ignored (the chain ends and
    /// the next listing reads the vault).
    ///
    /// record = header || u32be box length || XChaCha20-Poly1305(key,
    ///          u32be r || r × item id || encoded summaries, AD = label || header)
    func append(_ delta: Delta, vault: VaultID, key: SecretBytes) {
        guard delta.from.mac.count == 32, delta.to.mac.count == 32, var plain = Self.encode(delta.upserts, padBlock: 64) else { return }
        var removed = ByteWriter(capacity: 4 + 16 * delta.removed.count)
        removed.u32(UInt32(delta.removed.count))
        for id in delta.removed { removed.id(id) }
        plain = removed.data + plain
        let header = Self.deltaHeader(vault: vault, from: delta.from, to: delta.to)
        let box = AEAD.seal(plain, key: key, associatedData: Self.deltaLabel + header)
        var w = ByteWriter(capacity: header.count + 4 + box.count)
        w.bytes(header)
        w.u32(UInt32(box.count))
        w.bytes(box)
        try? PrivateFile.append(path: deltaPath, bytes: w.data, maxSize: Self.maxDeltaFileSize)
    }

    /// One record of the delta file, not yet opened.
    struct DeltaRecord {
        var from: ListingStamp
        var to: ListingStamp
        var header: [UInt8]
        var box: ArraySlice<UInt8>
    }

    /// The delta file's well-formed records of this vault, in file order;
    /// reading stops at the first malformed one (a torn append).
    func deltaRecords(vault: VaultID) -> [DeltaRecord] {
        guard let file = try? PrivateFile.read(path: deltaPath, maxSize: Self.maxDeltaFileSize) else { return [] }
        let bytes = file.bytes
        var out: [DeltaRecord] = []
        var offset = 0
        while bytes.count - offset >= Self.deltaHeaderSize + 4 {
            let header = Array(bytes[offset..<offset + Self.deltaHeaderSize])
            guard header[..<8].elementsEqual(Self.deltaMagic) else { break }
            var r = ByteReader(Array(header[8...]) + Array(bytes[offset + Self.deltaHeaderSize..<offset + Self.deltaHeaderSize + 4]))
            guard let id = try? r.bytes(16), let fromMAC = try? r.bytes(32), let fromCounter = try? r.u32(), let toMAC = try? r.bytes(32),
                let toCounter = try? r.u32(), let length = try? r.u32()
            else { break }
            let start = offset + Self.deltaHeaderSize + 4
            guard Int(length) <= bytes.count - start else { break }
            if id.elementsEqual(vault.bytes) {
                out.append(
                    DeltaRecord(
                        from: ListingStamp(mac: fromMAC, changeCounter: fromCounter), to: ListingStamp(mac: toMAC, changeCounter: toCounter),
                        header: header, box: bytes[start..<start + Int(length)]))
            }
            offset = start + Int(length)
        }
        return out
    }

    /// `items` (the listing at `base`) brought forward along the deltas
    /// from `base` to `target`, or nil when they do not lead there or one
    /// does not open under `key`.
    static func forward(_ base: [ItemSummary], from: ListingStamp, to target: ListingStamp, deltas: [DeltaRecord], key: SecretBytes)
        -> (items: [ItemSummary], steps: Int)?
    {
        var next: [[UInt8]: DeltaRecord] = [:]
        for d in deltas {
            let k = d.from.mac + withUnsafeBytes(of: d.from.changeCounter.bigEndian) { Array($0) }
            if next[k] == nil { next[k] = d }
        }
        // The chain's net change (the last word on each id), applied to
        // the base in one pass however many deltas there are.
        var changes: [ItemID: ItemSummary?] = [:]
        var state = from
        var steps = 0
        while state != target {
            guard steps < deltas.count,
                let d = next[state.mac + withUnsafeBytes(of: state.changeCounter.bigEndian) { Array($0) }],
                let plain = try? AEAD.open(d.box, key: key, associatedData: deltaLabel + d.header),
                plain.count >= 4
            else { return nil }
            var r = ByteReader(Array(plain[..<4]))
            guard let removedCount = try? r.u32(), Int(removedCount) <= (plain.count - 4) / 16 else { return nil }
            let idsEnd = 4 + Int(removedCount) * 16
            var ids = ByteReader(Array(plain[4..<idsEnd]))
            for _ in 0..<removedCount {
                guard let b = try? ids.bytes(16), let id = ItemID(bytes: b) else { return nil }
                changes[id] = .some(nil)
            }
            guard let upserts = decode(Array(plain[idsEnd...])) else { return nil }
            for u in upserts { changes[u.id] = .some(u) }
            state = d.to
            steps += 1
        }
        return (apply(changes, to: base), steps)
    }

    /// A listing sorted by (name, id) with `changes` applied: each id in
    /// `changes` is removed, and its new summary (when not nil) merged in
    /// at its place in the order.
    static func apply(_ changes: [ItemID: ItemSummary?], to items: [ItemSummary]) -> [ItemSummary] {
        guard !changes.isEmpty else { return items }
        let upserts = changes.values.compactMap { $0 }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
        var out: [ItemSummary] = []
        out.reserveCapacity(items.count + upserts.count)
        var next = 0
        for item in items where changes[item.id] == nil {
            while next < upserts.count, (upserts[next].name, upserts[next].id) < (item.name, item.id) {
                out.append(upserts[next])
                next += 1
            }
            out.append(item)
        }
        out.append(contentsOf: upserts[next...])
        return out
    }

    // MARK: Encoding

    static func encode(_ items: [ItemSummary], padBlock: Int = padBlock) -> [UInt8]? {
        var w = ByteWriter(capacity: 4 + items.count * 96)
        w.u32(UInt32(items.count))
        for s in items {
            var flags: UInt8 = (s.hasConflict ? 1 : 0) | (s.policy == .localOnly ? 2 : 0)
            if s.source != nil { flags |= 4 }
            if s.expires != nil { flags |= 8 }
            if s.username != nil { flags |= 16 }
            if s.url != nil { flags |= 32 }
            w.id(s.id)
            w.u8(flags)
            w.i64(Int64((s.updatedAt.timeIntervalSince1970 * 1000).rounded()))
            let texts: [String?] = [s.name, s.type.rawValue, s.tags.joined(separator: "\n"), s.source, s.expires?.description, s.username, s.url]
            for text in texts {
                guard let text else { continue }
                let utf8 = text.utf8
                guard utf8.count <= Int(UInt32.max) else { return nil }
                w.u32(UInt32(utf8.count))
                w.bytes(utf8)
            }
        }
        var out = w.data
        out.append(contentsOf: [UInt8](repeating: 0, count: (padBlock - out.count % padBlock) % padBlock))
        return out
    }

    /// Decodes a plaintext made by ``encode(_:)``; nil when malformed.
    static func decode(_ plain: [UInt8]) -> [ItemSummary]? {
        plain.withUnsafeBufferPointer { buffer -> [ItemSummary]? in
            var reader = Reader(buffer: buffer)
            guard let n = reader.u32(), Int(n) <= buffer.count / 29 else { return nil }
            var out: [ItemSummary] = []
            out.reserveCapacity(Int(n))
            for _ in 0..<n {
                guard let high = reader.u64(), let low = reader.u64(), let flags = reader.u8(), flags & ~63 == 0,
                    let updated = reader.u64(), let name = reader.text(), let type = reader.text(), let tags = reader.tags()
                else { return nil }
                var source: String?
                var expires: Day?
                var username: String?
                var url: String?
                if flags & 4 != 0 {
                    guard let t = reader.text() else { return nil }
                    source = t
                }
                if flags & 8 != 0 {
                    guard let t = reader.text(), let d = Day(t) else { return nil }
                    expires = d
                }
                if flags & 16 != 0 {
                    guard let t = reader.text() else { return nil }
                    username = t
                }
                if flags & 32 != 0 {
                    guard let t = reader.text() else { return nil }
                    url = t
                }
                out.append(
                    ItemSummary(
                        id: ItemID(high: high, low: low), name: name, type: ItemType(rawValue: type) ?? .custom, tags: tags,
                        source: source, expires: expires, policy: flags & 2 != 0 ? .localOnly : .sync, hasConflict: flags & 1 != 0,
                        updatedAt: Clock.date(Int64(bitPattern: updated)), username: username, url: url))
            }
            while let b = reader.u8() {
                guard b == 0 else { return nil }
            }
            return out
        }
    }

    /// Bounds-checked big-endian reads over the plaintext.
    struct Reader {
        let buffer: UnsafeBufferPointer<UInt8>
        var offset = 0

        init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func u8() -> UInt8? {
            guard offset < buffer.count else { return nil }
            defer { offset += 1 }
            return buffer[offset]
        }

        mutating func u32() -> UInt32? { bigEndian() }

        mutating func u64() -> UInt64? { bigEndian() }

        /// A big-endian integer, nil when the buffer ends first.
        private mutating func bigEndian<T: FixedWidthInteger & UnsignedInteger>() -> T? {
            let size = MemoryLayout<T>.size
            guard buffer.count - offset >= size else { return nil }
            var v: T = 0
            for i in 0..<size { v = v << 8 | T(buffer[offset + i]) }
            offset += size
            return v
        }

        /// LF-joined tags as a list (empty text: no tags).
        mutating func tags() -> [String]? {
            guard let n = u32(), Int(n) <= buffer.count - offset else { return nil }
            let end = offset + Int(n)
            var out: [String] = []
            var start = offset
            for i in offset..<end where buffer[i] == 0x0A {
                if i > start { out.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<i]), as: UTF8.self)) }
                start = i + 1
            }
            if end > start { out.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<end]), as: UTF8.self)) }
            offset = end
            return out
        }

        mutating func text() -> String? {
            guard let n = u32(), Int(n) <= buffer.count - offset else { return nil }
            let s = String(decoding: UnsafeBufferPointer(rebasing: buffer[offset..<offset + Int(n)]), as: UTF8.self)
            offset += Int(n)
            return s
        }
    }
}
