import CofferCrypto

/// The clear-text part of a bundle file (docs/bundle-format.md §Header).
///
/// ```
/// offset size field
/// 0      8    magic "COFFERB\n"
/// 8      2    format version (u16, big endian) = 1
/// 10     4    header body length L (u32)
/// 14     L    header body (below)
/// 14+L   24   crypto_secretstream_xchacha20poly1305 header
/// …           chunks: u32 ciphertext length || ciphertext
/// ```
///
/// The prefix (bytes `0 ..< 14+L`) is the associated data of the first
/// stream chunk, so nothing in it can change without the stream failing
/// authentication.
public struct BundleHeader: Sendable, Equatable {
    public enum Kind: UInt8, Sendable, CaseIterable {
        /// Everything that may sync.
        case full = 1
        /// Only versions the receiver (whose summary is ``since``) has not seen.
        case delta = 2

        public var name: String { self == .full ? "full" : "delta" }
    }

    public var vaultID: VaultID
    /// The replica that wrote the bundle.
    public var replicaID: ReplicaID
    public var kind: Kind
    /// Milliseconds since 1970, UTC.
    public var createdAt: Int64
    /// Number of item records, or nil when the writer did not know.
    public var recordCount: UInt64?
    public var kdf: KDFParameters
    /// Argon2id salt, 16 bytes.
    public var salt: [UInt8]
    /// The vault master key wrapped under the passphrase-derived key, 72 bytes.
    public var wrappedMasterKey: [UInt8]
    /// The exporting replica's summary vector when it wrote the bundle.
    public var summary: VersionVector
    /// For a delta, the receiver's summary it was computed against; empty
    /// for a full bundle.
    public var since: VersionVector
    /// Which passphrase change made ``wrappedMasterKey`` (format 2;
    /// ``KeyWrappingVersion/initial`` in a format-1 bundle).
    public var wrapping: KeyWrappingVersion
    /// Which rekey made the master key the bundle is written under
    /// (format 3; ``KeyEpoch/initial`` in formats 1 and 2).
    public var keyEpoch: KeyEpoch
    /// What the wrapped master key's associated data binds: format 4
    /// (``KeyHierarchy/WrapBinding/integrity``, `coffer-wrap-v3`) or
    /// formats 1 to 3 (``KeyHierarchy/WrapBinding/legacy``).
    public var wrapBinding: KeyHierarchy.WrapBinding
    /// The master key sealed to each member of a shared vault (format 5,
    /// docs/bundle-format.md §Format 5): ``BundleFormat/sealedKeyLength``
    /// bytes each, sorted bytewise; empty for a vault without members.
    public var sealedKeys: [[UInt8]] = []
    /// The Ed25519 public key (32 bytes) of the member who signed the
    /// bundle (format 6, docs/bundle-format.md §Format 6); nil for an
    /// unsigned bundle (formats 1 to 5).
    public var publisher: [UInt8]?
    /// The publisher's publication counter (format 6): above every
    /// counter of the same member's earlier bundles; 0 when unsigned.
    public var publication: UInt64 = 0

    public init(
        vaultID: VaultID, replicaID: ReplicaID, kind: Kind, createdAt: Int64, recordCount: UInt64?,
        kdf: KDFParameters, salt: [UInt8], wrappedMasterKey: [UInt8], summary: VersionVector, since: VersionVector,
        wrapping: KeyWrappingVersion = .initial, keyEpoch: KeyEpoch = .initial, wrapBinding: KeyHierarchy.WrapBinding = .legacy
    ) {
        self.wrapBinding = wrapBinding
        self.wrapping = wrapping
        self.keyEpoch = keyEpoch
        self.vaultID = vaultID
        self.replicaID = replicaID
        self.kind = kind
        self.createdAt = createdAt
        self.recordCount = recordCount
        self.kdf = kdf
        self.salt = salt
        self.wrappedMasterKey = wrappedMasterKey
        self.summary = summary
        self.since = since
    }
}

/// Constants of the bundle format (docs/bundle-format.md); ``version`` is the newest this build writes.
public enum BundleFormat {
    /// `COFFERB\n`: the newline catches text-mode transfers that rewrite line ends.
    public static let magic: [UInt8] = Array("COFFERB\n".utf8)
    /// The newest bundle format this build reads and writes. Writers use
    /// the oldest version that can carry the header: 1 while the vault's
    /// passphrase wrapping is the initial one (byte-identical to older
    /// coffers), 2 once a `passwd` has versioned it, 3 once a `rekey`
    /// has made a new master key (the header then carries the key epoch),
    /// 4 for a master key wrapped with `coffer-wrap-v3` (vault format 7;
    /// the body of format 3, its wrapping version and key epoch always
    /// present, initial or not).
    /// 5 when the master key is also sealed to members (format 4's body
    /// followed by the sealed keys).
    /// 6 when the bundle is also signed by a member (format 5's body
    /// followed by the publisher's Ed25519 key and publication counter, and
    /// a signature after the FINAL chunk).
    public static let version: UInt16 = 6
    /// The oldest bundle format this build reads.
    public static let oldestReadable: UInt16 = 1
    /// magic + version + body length.
    public static let prefixLength = 14
    /// Upper bound on the header body (two vectors of many replicas).
    public static let maxHeaderLength = 4 * 1024 * 1024
    /// Plaintext bytes per stream chunk (every chunk but the last is full).
    public static let chunkSize = 65536
    /// Largest ciphertext a chunk may have.
    public static var maxChunkCiphertext: Int { chunkSize + SecretStream.overhead }
    /// Largest record body accepted.
    public static let maxRecordLength = 64 * 1024 * 1024
    /// `u64` record count meaning "not known when the header was written".
    public static let unknownCount = UInt64.max
    /// Record types.
    public static let recordItem: UInt8 = 1
    public static let kdfArgon2id: UInt8 = 1
    public static let saltLength = 16
    public static let wrappedKeyLength = 72
    /// A sealed key (format 5): `crypto_box_seal` of the seal prefix (62
    /// bytes) and the master key (32), 48 bytes of overhead.
    public static let sealedKeyLength = 142
    /// An Ed25519 public key (format 6's publisher).
    public static let publisherKeyLength = 32
    /// The Ed25519 signature after a format-6 bundle's FINAL chunk.
    public static let signatureLength = 64
    /// Most sealed keys in one header.
    public static let maxSealedKeys = 1024

    /// The summary file written by `coffer summary` (§Summary files).
    public static let summaryMagic: [UInt8] = Array("COFFERS\n".utf8)
    public static let summaryVersion: UInt16 = 1
}

/// Why a byte string is not a bundle or cannot be read. Messages never
/// say which byte failed authentication.
public enum BundleError: Error, Equatable, Sendable {
    /// Zero bytes.
    case empty
    /// The magic does not match; `looksLike` says what the file seems to be.
    case notABundle(looksLike: String?)
    /// A format version this build does not read.
    case unsupportedVersion(UInt16)
    /// The data ends early; `part` is "header" or "stream".
    case truncated(part: String)
    /// The clear header breaks a rule of the spec.
    case malformedHeader(String)
    /// A stream chunk failed authentication: wrong vault key, or the bytes
    /// were corrupted or modified.
    case authenticationFailed
    /// An authenticated record breaks a rule of the spec (a writer bug).
    case malformedRecord(String)
    /// Bytes follow the final chunk.
    case trailingData
    /// An authenticated bundle breaks one of the validation rules
    /// (``BundleRule``): refused whole.
    case ruleBroken(BundleRule, String)
    /// Reading or writing the underlying file failed.
    case io(String)
}

extension BundleHeader {
    /// The header body (without the 14-byte prefix).
    public var encodedBody: [UInt8] {
        var w = ByteWriter(capacity: 200 + 24 * (summary.count + since.count))
        w.bytes(vaultID.bytes)
        w.bytes(replicaID.bytes)
        w.u8(kind.rawValue)
        w.i64(createdAt)
        w.u64(recordCount ?? BundleFormat.unknownCount)
        w.u8(BundleFormat.kdfArgon2id)
        w.u32(kdf.memoryKiB)
        w.u32(kdf.iterations)
        w.u32(kdf.parallelism)
        w.bytes(salt)
        w.bytes(wrappedMasterKey)
        w.bytes(summary.encoded)
        w.bytes(since.encoded)
        if formatVersion >= 2 { w.bytes(wrapping.encoded) }
        if formatVersion >= 3 { w.bytes(keyEpoch.encoded) }
        if formatVersion >= 5 {
            w.u16(UInt16(sealedKeys.count))
            for k in sealedKeys { w.bytes(k) }
        }
        if let publisher {
            w.bytes(publisher)
            w.u64(publication)
        }
        return w.data
    }

    /// The format version this header is written in: the oldest that can
    /// carry it — 1 for the initial wrapping and key, 2 for a versioned
    /// passphrase wrapping, 3 for a key of a later epoch than the first;
    /// 4 whenever the key is wrapped with `coffer-wrap-v3` (a build that
    /// reads only formats 1 to 3 must refuse such a bundle rather than
    /// take its wrapping, which it could not open).
    public var formatVersion: UInt16 {
        if publisher != nil { return 6 }
        if !sealedKeys.isEmpty { return 5 }
        if wrapBinding == .integrity { return 4 }
        return !keyEpoch.isInitial ? 3 : (wrapping.isInitial ? 1 : 2)
    }

    /// The clear prefix: magic, version, body length, body. This is the
    /// associated data of the first stream chunk.
    public var encoded: [UInt8] {
        precondition(salt.count == BundleFormat.saltLength && wrappedMasterKey.count == BundleFormat.wrappedKeyLength)
        // Format 5 is format 4's body plus the sealed keys: its wrapped key
        // is always `coffer-wrap-v3`'s.
        precondition(sealedKeys.isEmpty || wrapBinding == .integrity, "sealed keys need the coffer-wrap-v3 binding")
        precondition(
            publisher == nil || (!sealedKeys.isEmpty && publisher!.count == BundleFormat.publisherKeyLength), "a signed bundle seals its key to members")
        precondition(sealedKeys.count <= BundleFormat.maxSealedKeys && sealedKeys.allSatisfy { $0.count == BundleFormat.sealedKeyLength })
        let body = encodedBody
        var w = ByteWriter(capacity: BundleFormat.prefixLength + body.count)
        w.bytes(BundleFormat.magic)
        w.u16(formatVersion)
        w.u32(UInt32(body.count))
        w.bytes(body)
        return w.data
    }

    /// Decodes a header body of format `version` (1 to 6).
    public init(decodingBody body: [UInt8], version: UInt16 = 1) throws(BundleError) {
        var r = ByteReader(body)
        do {
            vaultID = VaultID(bytes: try r.bytes(16))!
            replicaID = ReplicaID(bytes: try r.bytes(16))!
            let k = try r.u8()
            guard let kind = Kind(rawValue: k) else { throw BundleError.malformedHeader("unknown bundle kind \(k)") }
            self.kind = kind
            createdAt = try r.i64()
            let count = try r.u64()
            recordCount = count == BundleFormat.unknownCount ? nil : count
            let alg = try r.u8()
            guard alg == BundleFormat.kdfArgon2id else { throw BundleError.malformedHeader("unknown key-derivation algorithm \(alg)") }
            kdf = KDFParameters(memoryKiB: try r.u32(), iterations: try r.u32(), parallelism: try r.u32())
            // The header is not authenticated until the master key is
            // unwrapped, which runs Argon2id with these parameters: refuse
            // out-of-range ones before spending hours or gigabytes on them.
            do { try kdf.validate() } catch {
                throw BundleError.malformedHeader("key-derivation parameters out of range (\(error))")
            }
            salt = try r.bytes(BundleFormat.saltLength)
            wrappedMasterKey = try r.bytes(BundleFormat.wrappedKeyLength)
            summary = try VersionVector(reading: &r)
            since = try VersionVector(reading: &r)
            wrapBinding = version >= 4 ? .integrity : .legacy
            if version >= 2 {
                wrapping = try KeyWrappingVersion(reading: &r)
                if wrapping.isInitial && version < 4 {
                    throw BundleError.malformedHeader("a format-\(version) header carries the initial passphrase wrapping (write format 1)")
                }
            } else {
                wrapping = .initial
            }
            if version >= 3 {
                keyEpoch = try KeyEpoch(reading: &r)
                if keyEpoch.isInitial && version < 4 {
                    throw BundleError.malformedHeader("a format-3 header carries key epoch 0 (write format 1 or 2)")
                }
            } else {
                keyEpoch = .initial
            }
            if version >= 5 {
                let n = Int(try r.u16())
                guard n >= 1 else { throw BundleError.malformedHeader("a format-\(version) header carries no sealed key (write format 4)") }
                guard n <= BundleFormat.maxSealedKeys else {
                    throw BundleError.malformedHeader("\(n) sealed keys, more than \(BundleFormat.maxSealedKeys)")
                }
                var keys: [[UInt8]] = []
                keys.reserveCapacity(n)
                for _ in 0..<n {
                    let k = try r.bytes(BundleFormat.sealedKeyLength)
                    if let last = keys.last, !last.lexicographicallyPrecedes(k) {
                        throw BundleError.malformedHeader("the sealed keys are not in increasing byte order")
                    }
                    keys.append(k)
                }
                sealedKeys = keys
            }
            if version >= 6 {
                publisher = try r.bytes(BundleFormat.publisherKeyLength)
                publication = try r.u64()
                guard publication >= 1, publication <= BundleValidation.maxCounter else {
                    throw BundleError.ruleBroken(.publicationCounter, "the publication counter \(publication) is not between 1 and 2^53")
                }
            }
        } catch let e as BundleError {
            throw e
        } catch FormatError.truncated {
            throw .malformedHeader("the header body is shorter than its fields")
        } catch FormatError.malformed(let why) {
            throw .malformedHeader(why)
        } catch {
            throw .malformedHeader("\(error)")
        }
        guard r.isAtEnd else { throw .malformedHeader("trailing bytes in the header body") }
        do { try kdf.validate() } catch { throw .malformedHeader("invalid key-derivation parameters (\(error))") }
        if kind == .full && !since.isEmpty { throw .malformedHeader("a full bundle carries a since-vector") }
    }

    /// Reads and checks the clear prefix from `input`, returning the header
    /// and the exact prefix bytes (the first chunk's associated data).
    public static func read(from input: any BundleInput) throws(BundleError) -> (header: BundleHeader, prefix: [UInt8]) {
        let start = try input.readBytes(BundleFormat.prefixLength)
        if start.isEmpty { throw .empty }
        let magicPart = Array(start.prefix(BundleFormat.magic.count))
        guard magicPart == BundleFormat.magic else {
            // A file shorter than the magic that matches it so far is a
            // truncated bundle; anything else is not a bundle at all.
            if magicPart.count < BundleFormat.magic.count && BundleFormat.magic.starts(with: magicPart) {
                throw .truncated(part: "header")
            }
            throw .notABundle(looksLike: BundleSniffer.describe(start + (try input.readBytes(64))))
        }
        guard start.count == BundleFormat.prefixLength else { throw .truncated(part: "header") }
        let version = UInt16(start[8]) << 8 | UInt16(start[9])
        guard (BundleFormat.oldestReadable...BundleFormat.version).contains(version) else { throw .unsupportedVersion(version) }
        let length = Int(UInt32(start[10]) << 24 | UInt32(start[11]) << 16 | UInt32(start[12]) << 8 | UInt32(start[13]))
        guard length <= BundleFormat.maxHeaderLength else {
            throw .malformedHeader("header length \(length) exceeds \(BundleFormat.maxHeaderLength)")
        }
        let body = try input.readBytes(length)
        guard body.count == length else { throw .truncated(part: "header") }
        let header = try BundleHeader(decodingBody: body, version: version)
        return (header, start + body)
    }
}

/// Guesses what a file that is not a bundle is, for a helpful message.
public enum BundleSniffer {
    public static func describe(_ start: [UInt8]) -> String? {
        if start.starts(with: Array("SQLite format 3\0".utf8)) { return "an SQLite database (a vault file?)" }
        if start.starts(with: BundleFormat.summaryMagic) { return "a Coffer summary file" }
        if start.starts(with: Array("age-encryption.org/".utf8)) { return "an age-encrypted file" }
        if start.starts(with: [0x1f, 0x8b]) { return "a gzip file" }
        if start.starts(with: Array("PK".utf8) + [3, 4]) { return "a zip file" }
        if !start.isEmpty, let text = String(validating: start, as: UTF8.self),
            text.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\n" || $0 == "\r" || $0 == "\t" })
        {
            return "a text file"
        }
        return nil
    }
}

/// Where a bundle is read from. `readBytes(n)` returns exactly `n` bytes,
/// or fewer only at end of input.
public protocol BundleInput: AnyObject {
    func readBytes(_ count: Int) throws(BundleError) -> [UInt8]
}

/// Where a bundle is written to.
public protocol BundleOutput: AnyObject {
    func writeBytes(_ bytes: [UInt8]) throws(BundleError)
}

/// An in-memory input (tests, vectors).
public final class ByteArrayInput: BundleInput {
    let bytes: [UInt8]
    var offset = 0
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public func readBytes(_ count: Int) throws(BundleError) -> [UInt8] {
        let n = min(count, bytes.count - offset)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }
}

/// An in-memory output (tests, vectors).
public final class ByteArrayOutput: BundleOutput {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public func writeBytes(_ b: [UInt8]) throws(BundleError) { bytes.append(contentsOf: b) }
}

extension BundleHeader {
    /// The master key sealed to `member` (format 5, docs/bundle-format.md
    /// §Format 5), found by trying each sealed key; nil when none is sealed
    /// to it. A key whose sealed prefix names another vault or key epoch
    /// breaks rule `sealed-key-binding`. The key is not yet known to be the
    /// bundle's: the caller reads the stream under it, and a key that does
    /// not authenticate chunk 0 is refused like any wrong key.
    public func openSealedKey(with member: MemberSecretKey) throws(BundleError) -> SecretBytes? {
        for box in sealedKeys {
            guard let (prefix, key) = try? member.openSealed(box, prefixLength: KeyHierarchy.sealPrefixLength) else { continue }
            guard prefix == KeyHierarchy.sealPrefix(vault: vaultID, epoch: keyEpoch), key.count == 32 else {
                throw .ruleBroken(.sealedKeyBinding, "the key sealed to this identity is for another vault or key epoch")
            }
            return key
        }
        return nil
    }
}
