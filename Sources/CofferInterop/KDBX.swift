import CofferCrypto
import CofferKit
import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// A KeePass database file (KDBX 3.1, 4.0 and 4.1; KDBX 2 too), read
/// natively (docs/import-export.md#kdbx): no other program runs, nothing
/// decrypted touches the disk. The header is parsed field by field with
/// every size checked against what the file holds; the key is the
/// password and/or key file (``KDBXKeyFile``) through AES-KDF, Argon2d or
/// Argon2id; the payload is AES-256-CBC or ChaCha20 (Twofish is refused by
/// name), authenticated by the HMAC block stream (KDBX 4) or the stream
/// start bytes and hashed blocks (KDBX 3.1), gzip-decompressed up to
/// ``Limits/xmlBytes``; the XML is read by ``KeePassXML`` with the inner
/// header's attachments and the protected-value stream.
///
/// A wrong password or key file is `wrongPassphrase` (exit 77); anything
/// damaged or unsupported is `badData` (exit 65) naming what failed.
public enum KDBX {
    /// Bounds on what a file may make the reader do (memory and time).
    public struct Limits: Sendable {
        /// The largest file read.
        public var fileBytes = 1 << 30
        /// The most the payload may decompress to (a gzip bomb stops here).
        public var xmlBytes = 512 << 20
        /// Argon2 memory a file may ask for.
        public var argon2MemoryKiB: UInt64 = 1 << 20
        /// Argon2 passes a file may ask for.
        public var argon2Iterations: UInt64 = 10_000
        /// Argon2 memory (KiB) times passes: 64 GiB-passes (1 GiB × 64,
        /// 64 MiB × 1,024), about a minute at most.
        public var argon2Work: UInt64 = 64 << 20
        /// AES-KDF rounds a file may ask for.
        public var aesRounds: UInt64 = 1 << 31

        public init() {}
    }

    /// Reads the database at `path` with `password` (and the key file at
    /// `keyFile`).
    public static func read(path: String, password: SecretBytes, keyFile: String? = nil, limits: Limits = Limits()) throws(CofferError) -> ImportedFile {
        let bytes = try fileBytes(path: path, keyFile: keyFile, limits: limits)
        return try read(bytes.file, file: path, password: password, keyFile: bytes.key, limits: limits)
    }

    /// Reads a database held in `bytes`; `file` names it in messages.
    public static func read(_ bytes: [UInt8], file: String, password: SecretBytes?, keyFile: SecretBytes?, limits: Limits = Limits()) throws(CofferError)
        -> ImportedFile
    {
        var read = try parse(try decrypt(bytes, file: file, password: password, keyFile: keyFile, limits: limits), file: file, sink: nil)
        read.entries = read.entries.map(restoringType)
        return read
    }

    /// Decrypts the database at `path` now (a wrong password or key file,
    /// or a damaged file, fails here, before any transaction), then reads
    /// its XML on a second thread for
    /// ``Vault/importEntries(_:options:progress:)-(InterchangeStream,_,_)``,
    /// as ``KeePassXML/stream(path:binaries:)`` does: the entries are
    /// parsed while the ones before are stored, and only a few batches of
    /// them are in memory at once (docs/import-export.md#kdbx).
    public static func stream(path: String, password: SecretBytes, keyFile: String? = nil, limits: Limits = Limits()) throws(CofferError)
        -> StreamedRead
    {
        let bytes = try fileBytes(path: path, keyFile: keyFile, limits: limits)
        let inner = try decrypt(bytes.file, file: path, password: password, keyFile: bytes.key, limits: limits)
        let box = StreamedRead.Box()
        let expected = KeePassXML.countEntries(inner.xml)
        let stream = InterchangeStream.start(expectedCount: expected) { s throws(CofferError) in
            box.set(try parse(inner, file: path, sink: { s.push(restoringType($0)) }).warnings)
        }
        return StreamedRead(stream: stream, box: box)
    }

    /// The file at `path` (checked against ``Limits/fileBytes``) and the key file's key.
    static func fileBytes(path: String, keyFile: String?, limits: Limits) throws(CofferError) -> (file: [UInt8], key: SecretBytes?) {
        try ImportError.checkReadable(path)
        let key = try keyFile.map { f throws(CofferError) in try KDBXKeyFile.load(path: f) }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= limits.fileBytes else {
            throw ImportError.bad(path, nil, "the file is \(size >> 20) MiB; coffer reads KeePass databases of at most \(limits.fileBytes >> 20) MiB")
        }
        return ([UInt8](try ImportError.read(path)), key)
    }

    /// Reads a decrypted database's XML with its attachments and
    /// protected values; with `sink`, each entry goes there instead of
    /// into the result.
    static func parse(_ inner: Inner, file: String, sink: ((InterchangeEntry) -> Bool)?) throws(CofferError) -> ImportedFile {
        let stream = inner.stream
        let unprotect: ((String) -> [UInt8]?)? = stream.map { s in
            { (text: String) -> [UInt8]? in
                guard var data = Data(base64Encoded: text, options: .ignoreUnknownCharacters).map({ [UInt8]($0) }) else { return nil }
                s.apply(&data)
                return data
            }
        }
        var pool: [String: KeePassXML.BinaryData] = [:]
        for (i, b) in inner.binaries.enumerated() { pool[String(i)] = b.count > Field.maxValueBytes ? .tooLarge : .bytes(b) }
        return try KeePassXML.read(
            stream: BytesInputStream(inner.xml), file: file, entities: DTDEntityUses.find(inner.xml), sink: sink, pool: pool, unprotect: unprotect)
    }

    /// The custom string holding an item's Coffer type when KeePass has
    /// none (docs/import-export.md#kdbx-export).
    public static let typeKey = "CofferType"

    /// An entry Coffer wrote (``KDBXWriter``) with its type in the custom
    /// string `CofferType`: that type again, its `key` from Password and
    /// its `email` from UserName.
    static func restoringType(_ e: InterchangeEntry) -> InterchangeEntry {
        guard let i = e.fields.firstIndex(where: { $0.name == typeKey && !$0.isFile }),
            let type = ItemType(rawValue: e.fields[i].value), type != .login
        else { return e }
        func fix(_ fields: [Field]) -> [Field] {
            var out = fields.filter { !($0.name == typeKey && !$0.isFile) }
            let names = Set(out.map(\.name))
            for j in out.indices where !out[j].isFile {
                if (type == .apiKey || type == .apiKeyWithEmail) && out[j].name == "password" && !names.contains("key") { out[j].name = "key" }
                if (type == .email || type == .apiKeyWithEmail) && out[j].name == "username" && !names.contains("email") { out[j].name = "email" }
            }
            return out
        }
        var out = e
        out.type = type
        out.fields = fix(e.fields)
        out.history = e.history.map { InterchangeVersion(fields: fix($0.fields), writtenAt: $0.writtenAt) }
        return out
    }

    /// A decrypted database: its XML, the KDBX 4 inner header's
    /// attachments, and the stream that hides protected values. Handed
    /// whole to the reading thread of ``stream(path:password:keyFile:limits:)``,
    /// which alone uses it from then on.
    struct Inner: @unchecked Sendable {
        /// The XML document (read in place by ``BytesInputStream``).
        var xml: [UInt8]
        var binaries: [[UInt8]]
        var stream: KDBXInnerStream?
        var version: UInt32
    }

    // MARK: File structure

    static let signature1: UInt32 = 0x9AA2_D903
    static let signature2: UInt32 = 0xB54B_FB67
    static let keePass1Signature2: UInt32 = 0xB54B_FB65

    static let aes256 = uuid("31c1f2e6bf714350be5805216afc5aff")
    static let chacha20 = uuid("d6038a2b8b6f4cb5a524339a31dbb59a")
    static let twofish = uuid("ad68f29f576f4bb9a36ad47af965346c")
    static let aes128 = uuid("61ab05a1946441c38d743a563df8dd35")
    static let kdfAES = uuid("c9d9f39a628a4460bf740d08c18a4fea")
    static let kdfAESKDBX3 = uuid("7c02bb8279a74ac0927d114a00648238")
    static let kdfArgon2d = uuid("ef636ddf8c29444b91f7a9a403e30a0c")
    static let kdfArgon2id = uuid("9e298b1956db4773b23dfc3ec6f0a1e6")

    static func uuid(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }

    /// Reads little-endian numbers and byte runs, never past the end.
    struct Cursor {
        let bytes: [UInt8]
        var at: Int

        init(_ bytes: [UInt8], at: Int = 0) {
            self.bytes = bytes
            self.at = at
        }

        var remaining: Int { bytes.count - at }

        mutating func take(_ n: Int) -> [UInt8]? {
            guard n >= 0, n <= remaining else { return nil }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }

        mutating func u8() -> UInt8? { take(1)?.first }

        mutating func uint(_ width: Int) -> UInt64? {
            guard let b = take(width) else { return nil }
            return KDBX.littleEndian(b)
        }
    }

    static func littleEndian(_ b: [UInt8]) -> UInt64 {
        var v: UInt64 = 0
        for (i, x) in b.prefix(8).enumerated() { v |= UInt64(x) << (8 * UInt64(i)) }
        return v
    }

    static func le(_ v: UInt64, _ width: Int) -> [UInt8] { (0..<width).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }

    /// The outer header's fields.
    struct Header {
        var cipher: [UInt8]?
        var compression: UInt64?
        var masterSeed: [UInt8]?
        var transformSeed: [UInt8]?
        var transformRounds: UInt64?
        var iv: [UInt8]?
        var protectedStreamKey: [UInt8]?
        var streamStart: [UInt8]?
        var innerStreamID: UInt64?
        var kdf: [String: VariantValue]?
        /// Where the header ends (the payload, or KDBX 4's hash, starts).
        var end = 0
    }

    enum VariantValue {
        case uint(UInt64)
        case bool(Bool)
        case int(Int64)
        case string(String)
        case bytes([UInt8])

        var uint: UInt64? {
            switch self {
            case .uint(let v): return v
            case .int(let v) where v >= 0: return UInt64(v)
            default: return nil
            }
        }
        var bytes: [UInt8]? {
            if case .bytes(let b) = self { return b }
            return nil
        }
    }

    static func damaged(_ file: String, _ why: String) -> CofferError {
        ImportError.bad(file, nil, why, hint: "the database file is damaged or not a KeePass database; check that KeePassXC opens it; nothing was imported")
    }

    static func wrongKey(_ file: String, keyFile: Bool) -> CofferError {
        CofferError(
            .wrongPassphrase, keyFile ? "the password and key file do not open \(file)" : "the password does not open \(file)",
            hint: keyFile
                ? "check the password and that --source-key-file is the database's key file"
                : "give the database's password with --source-passphrase-fd N, --source-passphrase-file F, or at the prompt (and --source-key-file if it has one)"
        )
    }

    /// Parses the outer header of a KDBX `major` (3 or 4) file.
    static func header(_ bytes: [UInt8], major: UInt32, file: String) throws(CofferError) -> Header {
        var c = Cursor(bytes, at: 12)
        var h = Header()
        let sizeWidth = major >= 4 ? 4 : 2
        let names = [
            1: "Comment", 2: "CipherID", 3: "CompressionFlags", 4: "MasterSeed", 5: "TransformSeed", 6: "TransformRounds", 7: "EncryptionIV",
            8: "ProtectedStreamKey", 9: "StreamStartBytes", 10: "InnerRandomStreamID", 11: "KdfParameters", 12: "PublicCustomData",
        ]
        while true {
            guard let id = c.u8(), let size = c.uint(sizeWidth) else { throw damaged(file, "the header is truncated") }
            let name = names[Int(id)] ?? "field \(id)"
            guard size <= UInt64(c.remaining), let data = c.take(Int(size)) else {
                throw damaged(file, "header field \(id == 0 ? "EndOfHeader" : name) claims \(size) bytes but the file has only \(c.remaining) left")
            }
            func number() throws(CofferError) -> UInt64 {
                guard data.count == 4 || data.count == 8 else { throw damaged(file, "header field \(name) has \(data.count) bytes, not a number") }
                return littleEndian(data)
            }
            switch id {
            case 0:
                h.end = c.at
                return h
            case 2: h.cipher = data
            case 3: h.compression = try number()
            case 4: h.masterSeed = data
            case 5: h.transformSeed = data
            case 6: h.transformRounds = try number()
            case 7: h.iv = data
            case 8: h.protectedStreamKey = data
            case 9: h.streamStart = data
            case 10: h.innerStreamID = try number()
            case 11 where major >= 4: h.kdf = try variantDictionary(data, file: file)
            default: break
            }
        }
    }

    /// KDBX 4's VariantDictionary (the KDF parameters).
    static func variantDictionary(_ data: [UInt8], file: String) throws(CofferError) -> [String: VariantValue] {
        var c = Cursor(data)
        guard let version = c.uint(2), version >> 8 == 1 else { throw damaged(file, "header field KdfParameters has an unknown version") }
        var out: [String: VariantValue] = [:]
        while true {
            guard let type = c.u8() else { throw damaged(file, "header field KdfParameters is truncated") }
            if type == 0 { return out }
            guard let nameLength = c.uint(4), let nameBytes = c.take(Int(nameLength)), let valueLength = c.uint(4),
                let value = c.take(Int(valueLength))
            else { throw damaged(file, "header field KdfParameters is truncated") }
            let name = String(decoding: nameBytes, as: UTF8.self)
            switch type {
            case 0x04, 0x05:
                guard value.count == (type == 0x04 ? 4 : 8) else { throw damaged(file, "KDF parameter \(name) has the wrong size") }
                out[name] = .uint(littleEndian(value))
            case 0x08: out[name] = .bool(value.first.map { $0 != 0 } ?? false)
            case 0x0C, 0x0D:
                guard value.count == (type == 0x0C ? 4 : 8) else { throw damaged(file, "KDF parameter \(name) has the wrong size") }
                let raw = littleEndian(value)
                out[name] = .int(type == 0x0C ? Int64(Int32(truncatingIfNeeded: raw)) : Int64(bitPattern: raw))
            case 0x18: out[name] = .string(String(decoding: value, as: UTF8.self))
            case 0x42: out[name] = .bytes(value)
            default: throw damaged(file, "KDF parameter \(name) has an unknown type \(type)")
            }
        }
    }

    // MARK: Decryption

    static func decrypt(_ bytes: [UInt8], file: String, password: SecretBytes?, keyFile: SecretBytes?, limits: Limits) throws(CofferError) -> Inner {
        var c = Cursor(bytes)
        guard let s1 = c.uint(4), let s2 = c.uint(4), s1 == signature1 else {
            throw ImportError.bad(file, nil, "not a KeePass database (no KDBX signature)", hint: "give a .kdbx file made by KeePass or KeePassXC")
        }
        if s2 == keePass1Signature2 {
            throw ImportError.bad(
                file, nil, "a KeePass 1 (.kdb) database; coffer reads KDBX (KeePass 2, KeePassXC)",
                hint: "open it in KeePassXC (Database > Import > KeePass 1) and save it as .kdbx")
        }
        guard s2 == signature2 else {
            throw ImportError.bad(file, nil, "not a KeePass 2 database (unknown signature)", hint: "give a .kdbx file made by KeePass or KeePassXC")
        }
        guard let version = c.uint(4) else { throw damaged(file, "the file ends inside its header (truncated)") }
        let major = UInt32(version >> 16)
        guard major >= 2 && major <= 4 else {
            throw ImportError.bad(
                file, nil, "KDBX version \(major).\(version & 0xFFFF) is not one coffer reads (2, 3.1, 4.0, 4.1)",
                hint: "save the database with KeePassXC 2.7 or KeePass 2.5x and import again")
        }
        let h = try header(bytes, major: major, file: file)
        guard let cipher = h.cipher else { throw damaged(file, "header field CipherID is missing") }
        if cipher == twofish {
            throw ImportError.bad(
                file, nil, "the database is encrypted with Twofish, which coffer does not read (it reads AES-256 and ChaCha20)",
                hint: "in KeePassXC, Database > Database Security > Encryption Settings: choose AES-256 or ChaCha20, save, and import again")
        }
        guard cipher == aes256 || cipher == chacha20 else {
            throw ImportError.bad(
                file, nil, "the database uses a cipher coffer does not read\(cipher == aes128 ? " (AES-128)" : "") (it reads AES-256 and ChaCha20)",
                hint: "in KeePassXC, Database > Database Security > Encryption Settings: choose AES-256 or ChaCha20, save, and import again")
        }
        let isChaCha = cipher == chacha20
        guard let seed = h.masterSeed, seed.count == 32 else { throw damaged(file, "header field MasterSeed is missing or not 32 bytes") }
        guard let iv = h.iv, iv.count == (isChaCha ? 12 : 16) else { throw damaged(file, "header field EncryptionIV is missing or has the wrong size") }
        let compression = h.compression ?? 0
        guard compression <= 1 else { throw damaged(file, "header field CompressionFlags names an unknown compression (\(compression))") }

        // Candidate composite keys: an empty password with a key file may
        // mean "no password" (KeePassXC's --no-password) or an empty one.
        var candidates: [SecretBytes] = [KDBXCrypto.compositeKey(password: password, keyFile: keyFile)]
        if keyFile != nil, password?.count ?? 0 == 0 { candidates.append(KDBXCrypto.compositeKey(password: nil, keyFile: keyFile)) }
        if password == nil && keyFile == nil { candidates = [KDBXCrypto.compositeKey(password: SecretBytes(copying: []), keyFile: nil)] }

        if major >= 4 {
            return try decrypt4(
                bytes, h, file: file, candidates: candidates, isChaCha: isChaCha, seed: seed, iv: iv, gzip: compression == 1,
                version: UInt32(version), keyFile: keyFile != nil, limits: limits)
        }
        return try decrypt3(
            bytes, h, file: file, candidates: candidates, isChaCha: isChaCha, seed: seed, iv: iv, gzip: compression == 1,
            version: UInt32(version), keyFile: keyFile != nil, limits: limits)
    }

    /// The transformed key (the KDF's output) for KDBX 4's parameters.
    static func transform4(_ composite: SecretBytes, _ p: [String: VariantValue], file: String, limits: Limits) throws(CofferError) -> SecretBytes {
        guard let id = p["$UUID"]?.bytes else { throw damaged(file, "the KDF parameters name no KDF") }
        do {
            if id == kdfAES || id == kdfAESKDBX3 {
                guard let rounds = p["R"]?.uint, let seed = p["S"]?.bytes, seed.count == 32 else {
                    throw damaged(file, "the AES-KDF parameters are incomplete")
                }
                guard rounds <= limits.aesRounds else { throw tooCostly(file, "AES-KDF rounds (\(rounds))") }
                return try KDBXCrypto.aesKDF(key: composite, seed: seed, rounds: rounds)
            }
            guard id == kdfArgon2d || id == kdfArgon2id else {
                throw ImportError.bad(
                    file, nil, "the database uses a key derivation coffer does not know",
                    hint: "in KeePassXC, Database > Database Security: choose Argon2 or AES-KDF, save, and import again")
            }
            guard let salt = p["S"]?.bytes, let lanes = p["P"]?.uint, let memory = p["M"]?.uint, let passes = p["I"]?.uint,
                let version = p["V"]?.uint
            else { throw damaged(file, "the Argon2 parameters are incomplete") }
            let kib = memory / 1024
            guard salt.count >= 8, salt.count <= 1024, lanes >= 1, lanes <= 255, passes >= 1, kib >= 8 * lanes, version == 0x10 || version == 0x13 else {
                throw damaged(file, "the Argon2 parameters are out of range")
            }
            guard kib <= limits.argon2MemoryKiB else { throw tooCostly(file, "Argon2 memory (\(kib >> 10) MiB)") }
            guard passes <= limits.argon2Iterations else { throw tooCostly(file, "Argon2 iterations (\(passes))") }
            guard kib.multipliedReportingOverflow(by: passes).partialValue <= limits.argon2Work, kib < 1 << 32, passes < 1 << 32 else {
                throw tooCostly(file, "Argon2 work (\(kib >> 10) MiB × \(passes) passes)")
            }
            let secret = p["K"]?.bytes ?? []
            let ad = p["A"]?.bytes ?? []
            guard secret.count <= 1024, ad.count <= 1024 else { throw damaged(file, "the Argon2 parameters are out of range") }
            return try KDBXCrypto.argon2(
                id == kdfArgon2d ? .d : .id, password: composite, salt: salt, iterations: UInt32(passes), memoryKiB: UInt32(kib),
                parallelism: UInt32(lanes), version: UInt32(version), secret: secret, associatedData: ad)
        } catch let e as CryptoError {
            throw CofferError(.internalError, "the key derivation failed: \(e)", hint: "check free memory and try again")
        } catch let e as CofferError {
            throw e
        } catch {
            throw CofferError(.internalError, "the key derivation failed: \(error)")
        }
    }

    static func tooCostly(_ file: String, _ what: String) -> CofferError {
        ImportError.bad(
            file, nil,
            "the database asks for \(what) above what coffer allows (1 GiB of Argon2 memory, 10,000 passes, memory × passes 64 GiB; 2^31 AES rounds)",
            hint: "lower the key derivation's cost in KeePassXC (Database > Database Security), save, and import again")
    }

    static func gunzip(_ data: [UInt8], file: String, limits: Limits) throws(CofferError) -> [UInt8] {
        switch Gzip.decompress(data, limit: limits.xmlBytes) {
        case .success(let out): return out
        case .failure(.tooLarge):
            throw ImportError.bad(
                file, nil, "the database decompresses to more than \(limits.xmlBytes >> 20) MiB (a gzip bomb?); nothing was read",
                hint: "this is more than coffer reads from one database; nothing was imported")
        case .failure(.malformed(let why)): throw damaged(file, "gzip: \(why)")
        }
    }

    static func decrypt4(
        _ bytes: [UInt8], _ h: Header, file: String, candidates: [SecretBytes], isChaCha: Bool, seed: [UInt8], iv: [UInt8], gzip: Bool,
        version: UInt32, keyFile: Bool, limits: Limits
    ) throws(CofferError) -> Inner {
        guard let kdf = h.kdf else { throw damaged(file, "header field KdfParameters is missing") }
        var c = Cursor(bytes, at: h.end)
        let headerBytes = Array(bytes[0..<h.end])
        guard let hash = c.take(32), let mac = c.take(32) else { throw damaged(file, "the file ends after its header (truncated)") }
        guard KDBXKeys.equal(hash, KDBXCrypto.sha256(headerBytes)) else { throw damaged(file, "the header's SHA-256 does not match (header damaged)") }
        var keys: KDBXKeys?
        for composite in candidates {
            let k = KDBXKeys(masterSeed: seed, transformedKey: try transform4(composite, kdf, file: file, limits: limits))
            if KDBXKeys.equal(mac, k.hmac(index: UInt64.max, headerBytes)) {
                keys = k
                break
            }
        }
        guard let keys else { throw wrongKey(file, keyFile: keyFile) }
        // The HMAC block stream.
        var payload: [UInt8] = []
        payload.reserveCapacity(c.remaining)
        var index: UInt64 = 0
        while true {
            guard let blockMAC = c.take(32), let sizeBytes = c.take(4) else { throw damaged(file, "the file is truncated in block \(index)") }
            let size = Int32(truncatingIfNeeded: littleEndian(sizeBytes))
            guard size >= 0, Int(size) <= c.remaining, let data = c.take(Int(size)) else {
                throw damaged(file, "block \(index) claims \(size) bytes but the file has \(c.remaining) left (truncated?)")
            }
            guard KDBXKeys.equal(blockMAC, keys.hmac(index: index, le(index, 8), sizeBytes, data)) else {
                throw damaged(file, "block \(index) HMAC does not match (the file is damaged)")
            }
            if size == 0 { break }
            payload += data
            index += 1
        }
        do {
            if isChaCha {
                try keys.chacha20(&payload, nonce: iv)
            } else {
                payload = try keys.aesCBCDecrypt(payload, iv: iv)
            }
        } catch {
            throw damaged(file, "the payload does not decrypt (\(error))")
        }
        if gzip { payload = try gunzip(payload, file: file, limits: limits) }
        // The inner header.
        var binaries: [[UInt8]] = []
        var streamID: UInt64?
        var streamKey: [UInt8]?
        var headerEnd = 0
        do {
            // The cursor's reference to `payload` ends with this scope, so
            // the header is removed in place below (no second copy of the
            // document, the import's largest allocation).
            var p = Cursor(payload)
            while true {
                guard let id = p.u8(), let sizeBytes = p.take(4) else { throw damaged(file, "the inner header is truncated") }
                let size = Int32(truncatingIfNeeded: littleEndian(sizeBytes))
                guard size >= 0, Int(size) <= p.remaining, let data = p.take(Int(size)) else {
                    throw damaged(file, "inner header field \(id) claims \(size) bytes but only \(p.remaining) follow")
                }
                if id == 0 { break }
                switch id {
                case 1:
                    guard data.count == 4 else { throw damaged(file, "inner header field InnerRandomStreamID has the wrong size") }
                    streamID = littleEndian(data)
                case 2: streamKey = data
                case 3:
                    guard !data.isEmpty else { throw damaged(file, "an inner header binary has no flags byte") }
                    binaries.append(Array(data.dropFirst()))
                default: break
                }
            }
            headerEnd = p.at
        }
        let stream = try innerStream(streamID, streamKey, file: file)
        payload.removeFirst(headerEnd)
        return Inner(xml: payload, binaries: binaries, stream: stream, version: version)
    }

    static func innerStream(_ id: UInt64?, _ key: [UInt8]?, file: String) throws(CofferError) -> KDBXInnerStream? {
        switch id ?? 0 {
        case 0: return nil
        case 2, 3:
            guard let key, !key.isEmpty else { throw damaged(file, "the protected-value stream has no key") }
            return KDBXInnerStream(id == 2 ? .salsa20 : .chacha20, streamKey: key)
        case 1:
            throw ImportError.bad(
                file, nil, "the database hides its protected values with ArcFour, which coffer does not read",
                hint: "save the database with a current KeePass or KeePassXC and import again")
        default: throw damaged(file, "the protected-value stream is of an unknown kind (\(id ?? 0))")
        }
    }

    static func decrypt3(
        _ bytes: [UInt8], _ h: Header, file: String, candidates: [SecretBytes], isChaCha: Bool, seed: [UInt8], iv: [UInt8], gzip: Bool,
        version: UInt32, keyFile: Bool, limits: Limits
    ) throws(CofferError) -> Inner {
        guard let tseed = h.transformSeed, tseed.count == 32 else { throw damaged(file, "header field TransformSeed is missing or not 32 bytes") }
        guard let rounds = h.transformRounds else { throw damaged(file, "header field TransformRounds is missing") }
        guard let start = h.streamStart, start.count == 32 else { throw damaged(file, "header field StreamStartBytes is missing or not 32 bytes") }
        guard rounds <= limits.aesRounds else { throw tooCostly(file, "AES-KDF rounds (\(rounds))") }
        let encrypted = Array(bytes[h.end...])
        guard encrypted.count >= 32 else { throw damaged(file, "the file ends after its header (truncated)") }
        var plain: [UInt8]?
        for composite in candidates {
            let transformed: SecretBytes
            do { transformed = try KDBXCrypto.aesKDF(key: composite, seed: tseed, rounds: rounds) } catch {
                throw CofferError(.internalError, "the key derivation failed: \(error)")
            }
            let keys = KDBXKeys(masterSeed: seed, transformedKey: transformed)
            // The first 32 bytes (two AES blocks) decide whether the key is
            // right, whatever follows: a later error is damage, not the key.
            var head = Array(encrypted.prefix(32))
            do {
                if isChaCha {
                    try keys.chacha20(&head, nonce: iv)
                } else {
                    head = try keys.aesCBCDecryptBlocks(head, iv: iv)
                }
            } catch { continue }
            guard KDBXKeys.equal(head, start) else { continue }
            do {
                if isChaCha {
                    var out = encrypted
                    try keys.chacha20(&out, nonce: iv)
                    plain = out
                } else {
                    plain = try keys.aesCBCDecrypt(encrypted, iv: iv)
                }
            } catch {
                throw damaged(file, "the encrypted payload is truncated or damaged (it does not decrypt)")
            }
            break
        }
        guard let plain else { throw wrongKey(file, keyFile: keyFile) }
        // The hashed block stream.
        var c = Cursor(plain, at: 32)
        var payload: [UInt8] = []
        payload.reserveCapacity(c.remaining)
        var expected: UInt64 = 0
        while true {
            guard let index = c.uint(4), let hash = c.take(32), let sizeBytes = c.take(4) else {
                throw damaged(file, "the file is truncated in block \(expected)")
            }
            guard index == expected else { throw damaged(file, "block \(expected) is out of order") }
            let size = Int32(truncatingIfNeeded: littleEndian(sizeBytes))
            guard size >= 0, Int(size) <= c.remaining, let data = c.take(Int(size)) else {
                throw damaged(file, "block \(expected) claims \(size) bytes but only \(c.remaining) follow (truncated?)")
            }
            if size == 0 {
                guard hash.allSatisfy({ $0 == 0 }) else { throw damaged(file, "the final block's hash is not zero") }
                break
            }
            guard KDBXKeys.equal(hash, KDBXCrypto.sha256(data)) else { throw damaged(file, "block \(expected) hash does not match (the file is damaged)") }
            payload += data
            expected += 1
        }
        if gzip { payload = try gunzip(payload, file: file, limits: limits) }
        let stream = try innerStream(h.innerStreamID, h.protectedStreamKey, file: file)
        // KDBX 3.1 keeps the header's SHA-256 in <Meta><HeaderHash>: a
        // changed header field (the protected stream key) is caught here.
        if let stated = headerHash(in: payload) {
            guard let decoded = Data(base64Encoded: stated), KDBXKeys.equal([UInt8](decoded), KDBXCrypto.sha256(Array(bytes[0..<h.end]))) else {
                throw damaged(file, "the header does not match the hash in the database's Meta (header damaged)")
            }
        }
        return Inner(xml: payload, binaries: [], stream: stream, version: version)
    }

    /// The text of `<HeaderHash>` in the XML's `<Meta>` (before `<Root>`).
    static func headerHash(in xml: [UInt8]) -> String? {
        let open = Array("<HeaderHash>".utf8)
        let close = Array("</HeaderHash>".utf8)
        let root = Array("<Root>".utf8)
        let limit = min(xml.count, 1 << 20)
        guard let start = find(open, in: xml, from: 0, to: limit) else { return nil }
        if let r = find(root, in: xml, from: 0, to: limit), r < start { return nil }
        let from = start + open.count
        guard let end = find(close, in: xml, from: from, to: min(xml.count, from + 200)) else { return nil }
        return String(decoding: xml[from..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int, to: Int) -> Int? {
        guard to - needle.count >= from else { return nil }
        var i = from
        while i <= to - needle.count {
            if hay[i] == needle[0] && Array(hay[i..<i + needle.count]) == needle { return i }
            i += 1
        }
        return nil
    }
}

/// A KeePass key file (`--source-key-file`), read as KeePass and KeePassXC
/// read it: an XML key file version 1.0 (base64) or 2.0 (hex, with its
/// check hash), 32 raw bytes, 64 hex digits, or else any file, hashed with
/// SHA-256.
public enum KDBXKeyFile {
    /// The largest key file read (KeePass hashes a file of any size).
    static let maxBytes = 64 << 20

    public static func load(path: String) throws(CofferError) -> SecretBytes {
        try ImportError.checkReadable(path)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= maxBytes else {
            throw ImportError.bad(path, nil, "the key file is larger than 64 MiB", hint: "give the database's key file with --source-key-file")
        }
        var bytes = [UInt8](try ImportError.read(path))
        defer { KDBXCrypto.zeroize(&bytes) }
        return try key(from: bytes, file: path)
    }

    static func key(from bytes: [UInt8], file: String) throws(CofferError) -> SecretBytes {
        if let xml = try xmlKey(bytes, file: file) { return xml }
        if bytes.count == 32 { return SecretBytes(copying: bytes) }
        if bytes.count == 64, var decoded = hex(bytes) { return SecretBytes(consuming: &decoded) }
        var hashed = KDBXCrypto.sha256(bytes)
        return SecretBytes(consuming: &hashed)
    }

    static func hex(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        guard bytes.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 2)
        var high: UInt8?
        for b in bytes {
            let v: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = b - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }

    /// The key of an XML key file; nil when the file is not one.
    static func xmlKey(_ bytes: [UInt8], file: String) throws(CofferError) -> SecretBytes? {
        guard bytes.count < 1 << 20, let text = String(validating: bytes, as: UTF8.self), text.contains("<KeyFile") else { return nil }
        let parser = XMLParser(data: Data(bytes))
        let reader = KeyFileXML()
        parser.delegate = reader
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), reader.root == "KeyFile" else { return nil }
        let bad = { (why: String) in
            ImportError.bad(file, nil, "the key file \(why)", hint: "give the database's key file with --source-key-file; nothing was imported")
        }
        let data = reader.data.filter { !$0.isWhitespace }
        if reader.version.hasPrefix("2.") {
            guard var key = hex(Array(data.utf8)), key.count == 32 else { throw bad("is not valid (its Data is not 32 bytes of hex)") }
            let check = KDBXCrypto.sha256(key).prefix(4)
            guard let stated = reader.dataHash.map({ hex(Array($0.filter { !$0.isWhitespace }.utf8)) }), stated == Array(check) else {
                KDBXCrypto.zeroize(&key)
                throw bad("is damaged (its Data does not match its Hash)")
            }
            return SecretBytes(consuming: &key)
        }
        guard reader.version.hasPrefix("1."), let decoded = Data(base64Encoded: data) else { throw bad("is not valid (unknown version or bad base64)") }
        var key = [UInt8](decoded)
        return SecretBytes(consuming: &key)
    }

    final class KeyFileXML: NSObject, XMLParserDelegate {
        var root: String?
        var path: [String] = []
        var text = ""
        var version = ""
        var data = ""
        var dataHash: String?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if root == nil { root = name }
            path.append(name)
            text = ""
            if name == "Data" { dataHash = attributes["Hash"] }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "Version" && path.dropLast().last == "Meta" { version = text.trimmingCharacters(in: .whitespacesAndNewlines) }
            if name == "Data" && path.dropLast().last == "Key" { data = text }
            path.removeLast()
            text = ""
        }
    }
}
