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
    /// stale, unauthentic, unreadable, not private: never an error).
    func load(vault: VaultID, stamp: ListingStamp, key: SecretBytes) -> [ItemSummary]? {
        guard let file = try? PrivateFile.read(path: path, maxSize: Self.maxFileSize) else { return nil }
        let header = Self.header(vault: vault, stamp: stamp)
        let bytes = file.bytes
        guard bytes.count > header.count, bytes[..<header.count].elementsEqual(header) else { return nil }
        guard let plain = try? AEAD.open(bytes[header.count...], key: key, associatedData: Self.label + header) else { return nil }
        return Self.decode(plain)
    }

    /// Writes the listing for this vault state; failures are ignored (the
    /// next listing reads the vault again).
    func store(_ items: [ItemSummary], vault: VaultID, stamp: ListingStamp, key: SecretBytes) {
        guard let plain = Self.encode(items) else { return }
        let header = Self.header(vault: vault, stamp: stamp)
        let file = header + AEAD.seal(plain, key: key, associatedData: Self.label + header)
        guard file.count <= Self.maxFileSize else { return }
        try? PrivateFile.replace(path: path, bytes: file)
    }

    // MARK: Encoding

    static func encode(_ items: [ItemSummary]) -> [UInt8]? {
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
