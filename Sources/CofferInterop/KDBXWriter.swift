import CofferCrypto
import CofferKit
import Foundation

/// Writes a KDBX 4.0 database (docs/import-export.md#kdbx-export): Argon2id
/// (``Parameters``), ChaCha20 payload, HMAC-SHA-256 blocks, gzip,
/// attachments in the inner header, secret fields as protected values
/// (ChaCha20 inner stream). KeePassXC, KeePassDX, Strongbox and pykeepass
/// open it.
///
/// What maps to what: item names become groups and a title; `username`,
/// `password`, `url`, `notes` and `totp` become UserName, Password, URL,
/// Notes and `otp`; other fields are custom strings (secret ones
/// protected); attachments are KeePass attachments; tags, expiry and the
/// history of field values are KeePass's own. Types KeePass lacks keep
/// their type in the custom string `CofferType`: an `api-key`'s `key` is
/// the Password, an `email`'s `email` the UserName. ``KDBX`` reads
/// `CofferType` back.
public enum KDBXWriter {
    /// The Argon2id cost written in the header.
    public struct Parameters: Sendable {
        public var memoryBytes: UInt64
        public var iterations: UInt64
        public var parallelism: UInt32

        public init(memoryBytes: UInt64, iterations: UInt64, parallelism: UInt32) {
            self.memoryBytes = memoryBytes
            self.iterations = iterations
            self.parallelism = parallelism
        }

        /// 64 MiB (KeePassXC's default memory), 10 passes, 2 lanes.
        public static let `default` = Parameters(memoryBytes: 64 << 20, iterations: 10, parallelism: 2)
    }

    /// The database file's bytes for `entries` under `password`.
    public static func write(_ entries: [InterchangeEntry], password: SecretBytes, parameters: Parameters = .default) throws(CofferError) -> [UInt8] {
        var streamKey = Random.bytes(64)
        defer { KDBXCrypto.zeroize(&streamKey) }
        // The payload: inner header, then the XML.
        let stream = KDBXInnerStream(.chacha20, streamKey: streamKey)
        let (xml, binaries) = self.xml(entries, stream: stream)
        var payload: [UInt8] = []
        payload.reserveCapacity(xml.count + binaries.reduce(0) { $0 + $1.count + 6 } + 128)
        payload += [1] + KDBX.le(4, 4) + KDBX.le(3, 4)
        payload += [2] + KDBX.le(64, 4) + streamKey
        for b in binaries { payload += [3] + KDBX.le(UInt64(b.count + 1), 4) + [0x01] + b }
        payload += [0] + KDBX.le(0, 4)
        payload += xml
        return try seal(&payload, password: password, parameters: parameters)
    }

    /// The file around `payload` (the inner header and the XML): gzip,
    /// ChaCha20, the HMAC blocks and the outer header. Wipes `payload`.
    static func seal(_ payload: inout [UInt8], password: SecretBytes, parameters: Parameters, gzip: Bool = true) throws(CofferError) -> [UInt8] {
        let masterSeed = Random.bytes(32)
        let iv = Random.bytes(12)
        let salt = Random.bytes(32)

        // The outer header.
        var header: [UInt8] = []
        header += KDBX.le(UInt64(KDBX.signature1), 4) + KDBX.le(UInt64(KDBX.signature2), 4) + KDBX.le(0x0004_0000, 4)
        func field(_ id: UInt8, _ data: [UInt8]) { header += [id] + KDBX.le(UInt64(data.count), 4) + data }
        field(2, KDBX.chacha20)
        field(3, KDBX.le(gzip ? 1 : 0, 4))
        field(4, masterSeed)
        field(7, iv)
        var kdf: [UInt8] = KDBX.le(0x0100, 2)
        func entry(_ type: UInt8, _ name: String, _ value: [UInt8]) {
            kdf += [type] + KDBX.le(UInt64(name.utf8.count), 4) + Array(name.utf8) + KDBX.le(UInt64(value.count), 4) + value
        }
        entry(0x42, "$UUID", KDBX.kdfArgon2id)
        entry(0x42, "S", salt)
        entry(0x04, "P", KDBX.le(UInt64(parameters.parallelism), 4))
        entry(0x05, "M", KDBX.le(parameters.memoryBytes, 8))
        entry(0x05, "I", KDBX.le(parameters.iterations, 8))
        entry(0x04, "V", KDBX.le(0x13, 4))
        kdf.append(0)
        field(11, kdf)
        field(0, [0x0D, 0x0A, 0x0D, 0x0A])

        let composite = KDBXCrypto.compositeKey(password: password, keyFile: nil)
        let transformed: SecretBytes
        do {
            transformed = try KDBXCrypto.argon2(
                .id, password: composite, salt: salt, iterations: UInt32(clamping: parameters.iterations),
                memoryKiB: UInt32(clamping: parameters.memoryBytes / 1024),
                parallelism: parameters.parallelism, version: 0x13)
        } catch {
            throw CofferError(.internalError, "the key derivation failed: \(error)", hint: "check free memory and try again")
        }
        let keys = KDBXKeys(masterSeed: masterSeed, transformedKey: transformed)

        var compressed: [UInt8]
        if gzip {
            guard let c = Gzip.compress(payload) else { throw CofferError(.internalError, "gzip compression failed", hint: "nothing was written") }
            compressed = c
            KDBXCrypto.zeroize(&payload)
        } else {
            compressed = payload
            payload = []
        }
        do { try keys.chacha20(&compressed, nonce: iv) } catch { throw CofferError(.internalError, "encryption failed: \(error)") }

        var out = header
        out.reserveCapacity(header.count + 64 + compressed.count + (compressed.count >> 20 + 2) * 36)
        out += KDBXCrypto.sha256(header)
        out += keys.hmac(index: UInt64.max, header)
        let blockSize = 1 << 20
        var index: UInt64 = 0
        var start = 0
        while true {
            let end = min(start + blockSize, compressed.count)
            let data = Array(compressed[start..<end])
            let size = KDBX.le(UInt64(data.count), 4)
            out += keys.hmac(index: index, KDBX.le(index, 8), size, data)
            out += size
            out += data
            if data.isEmpty { break }
            start = end
            index += 1
        }
        return out
    }

    /// KeePass's time format in KDBX 4: base64 of the seconds since
    /// 0001-01-01 as a little-endian Int64.
    static func time(_ d: Date) -> String {
        let seconds = Int64(d.timeIntervalSince1970.rounded(.down)) + 62_135_596_800
        return Data(KDBX.le(UInt64(bitPattern: seconds), 8)).base64EncodedString()
    }

    /// The KeePass string key a field of an item of `type` asks for.
    static func key(_ name: String, type: ItemType) -> String {
        switch (type, name) {
        case (.apiKey, "key"), (.apiKeyWithEmail, "key"): return "Password"
        case (.email, "email"), (.apiKeyWithEmail, "email"): return "UserName"
        case (_, "username"): return "UserName"
        case (_, "password"): return "Password"
        case (_, "url"): return "URL"
        case (_, "notes"): return "Notes"
        case (_, "totp"): return "otp"
        default: return name
        }
    }

    /// The XML, protected values encrypted with `stream` in document
    /// order, and the attachments' bytes by inner-header index.
    static func xml(_ entries: [InterchangeEntry], stream: KDBXInnerStream) -> ([UInt8], [[UInt8]]) {
        let root = KeePassGroup.tree(of: entries, rootName: "Coffer")
        var binaries: [[UInt8]] = []
        var binaryIDs: [[UInt8]: Int] = [:]
        func binaryID(_ bytes: [UInt8]) -> Int {
            if let id = binaryIDs[bytes] { return id }
            binaries.append(bytes)
            binaryIDs[bytes] = binaries.count - 1
            return binaries.count - 1
        }
        func uuid() -> String { Data(Random.bytes(16)).base64EncodedString() }
        let now = time(Date())
        var out = ""
        out.reserveCapacity(entries.count * 1200)

        func value(_ text: String, protected: Bool) -> String {
            guard protected else { return "<Value>\(KeePassXML.escape(text))</Value>" }
            var bytes = Array(text.utf8)
            stream.apply(&bytes)
            return "<Value Protected=\"True\">\(Data(bytes).base64EncodedString())</Value>"
        }
        func emitEntry(_ title: String, _ e: InterchangeEntry, id: String, fields: [Field], modified: String, history: [InterchangeVersion]?) {
            out += "<Entry><UUID>\(id)</UUID>"
            if !e.tags.isEmpty { out += "<Tags>\(KeePassXML.escape(e.tags.joined(separator: ";")))</Tags>" }
            out += "<Times><CreationTime>\(modified)</CreationTime><LastModificationTime>\(modified)</LastModificationTime>"
            out += "<LastAccessTime>\(modified)</LastAccessTime><LocationChanged>\(modified)</LocationChanged>"
            if let d = e.expires {
                out += "<ExpiryTime>\(time(d.date))</ExpiryTime><Expires>True</Expires>"
            } else {
                out += "<ExpiryTime>\(modified)</ExpiryTime><Expires>False</Expires>"
            }
            out += "<UsageCount>0</UsageCount></Times>"
            var strings: [(String, String, Bool)] = [("Title", title, false)]
            if e.type != .login && e.type != .custom { strings.append((KDBX.typeKey, e.type.rawValue, false)) }
            // A key already taken (a field named `Title`, or `username` in
            // an `email` item whose `email` is the UserName) keeps the
            // field's own name, or gets " (coffer)" appended.
            var used: Set<String> = Set(strings.map(\.0))
            for f in fields where !f.isFile {
                var k = key(f.name, type: e.type)
                if used.contains(k) { k = f.name }
                while used.contains(k) { k += " (coffer)" }
                used.insert(k)
                strings.append((k, f.value, f.isSecret))
            }
            for (k, v, secret) in strings {
                out += "<String><Key>\(KeePassXML.escape(k))</Key>\(value(v, protected: secret))</String>"
            }
            for f in fields where f.isFile {
                out += "<Binary><Key>\(KeePassXML.escape(f.name))</Key><Value Ref=\"\(binaryID(f.bytes))\"/></Binary>"
            }
            if let history {
                out += "<History>"
                for h in history {
                    emitEntry(title, e, id: id, fields: h.fields, modified: h.writtenAt.map(time) ?? modified, history: nil)
                }
                out += "</History>"
            }
            out += "</Entry>\n"
        }
        func emit(_ g: KeePassGroup) {
            out += "<Group><UUID>\(uuid())</UUID><Name>\(KeePassXML.escape(g.name))</Name>\n"
            for (title, e) in g.entries {
                emitEntry(title, e, id: uuid(), fields: e.fields, modified: now, history: e.history)
            }
            for name in g.order { emit(g.groups[name]!) }
            out += "</Group>\n"
        }
        emit(root)
        var xml = Array("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<KeePassFile>\n<Meta>".utf8)
        xml += Array(
            ("<Generator>Coffer</Generator><DatabaseName>Coffer export</DatabaseName><DatabaseNameChanged>\(now)</DatabaseNameChanged>"
                + "<MemoryProtection><ProtectTitle>False</ProtectTitle><ProtectUserName>False</ProtectUserName><ProtectPassword>True</ProtectPassword>"
                + "<ProtectURL>False</ProtectURL><ProtectNotes>False</ProtectNotes></MemoryProtection>"
                + "<RecycleBinEnabled>False</RecycleBinEnabled><HistoryMaxItems>-1</HistoryMaxItems><HistoryMaxSize>-1</HistoryMaxSize>"
                + "</Meta>\n<Root>\n").utf8)
        xml += Array(out.utf8)
        xml += Array("</Root>\n</KeePassFile>\n".utf8)
        return (xml, binaries)
    }
}
