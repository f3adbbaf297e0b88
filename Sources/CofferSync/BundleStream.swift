import CofferCrypto

/// Writes a bundle: the clear prefix, the secretstream header, then the
/// records in chunks of ``BundleFormat/chunkSize`` plaintext bytes. Holds at
/// most one chunk and one record in memory.
public final class BundleWriter {
    private let output: any BundleOutput
    private let stream: SecretStream.Writer
    private let prefix: [UInt8]
    private var buffer = ByteWriter(capacity: BundleFormat.chunkSize * 2)
    private var chunksWritten = 0
    public private(set) var recordsWritten: UInt64 = 0
    public private(set) var bytesWritten = 0
    private var finished = false
    private var lastItem: ItemID?
    /// Format 6: the signer and the digest of every byte written so far.
    private let signer: MemberSecretKey?
    private let digest: StreamingDigest?

    /// Starts a bundle. A `signer` (format 6: the header's ``BundleHeader/publisher``
    /// must be its Ed25519 key) signs the BLAKE2b-512 of every byte, appended
    /// after the FINAL chunk. `bundleKey` is sub-key 4 of the vault master key
    /// (``KeyHierarchy/SubKeyID/bundle``). `streamHeader` is only for
    /// deterministic test vectors.
    public init(
        header: BundleHeader, bundleKey: SecretBytes, output: any BundleOutput, streamHeader: [UInt8]? = nil, signer: MemberSecretKey? = nil
    ) throws(BundleError) {
        precondition(
            (signer == nil) == (header.publisher == nil) && (signer == nil || signer!.publicKey.signKey == header.publisher!),
            "a signed bundle's header names its signer's key")
        self.output = output
        self.signer = signer
        digest = signer == nil ? nil : StreamingDigest()
        prefix = header.encoded
        if let streamHeader {
            stream = SecretStream.Writer(key: bundleKey, deterministicHeader: streamHeader)
        } else {
            stream = SecretStream.Writer(key: bundleKey)
        }
        try emit(prefix)
        try emit(stream.header)
    }

    private func emit(_ bytes: [UInt8]) throws(BundleError) {
        digest?.update(bytes)
        try output.writeBytes(bytes)
        bytesWritten += bytes.count
    }

    private func pushChunk(_ plain: ArraySlice<UInt8>, final: Bool) throws(BundleError) {
        let ct = stream.push(Array(plain), tag: final ? .final : .message, associatedData: chunksWritten == 0 ? prefix : [])
        chunksWritten += 1
        var w = ByteWriter(capacity: 4 + ct.count)
        w.u32(UInt32(ct.count))
        w.bytes(ct)
        try emit(w.data)
    }

    /// Appends one item record. Items must come in ascending id order.
    public func write(_ state: ItemState) throws(BundleError) {
        precondition(!finished && openItem == nil)
        if let lastItem { precondition(lastItem < state.id, "bundle records must be in ascending item id order") }
        lastItem = state.id
        BundleRecord.encodeItem(state, into: &buffer)
        recordsWritten += 1
        try flushFullChunks()
    }

    /// Where the open record (``beginItem(_:)``) starts in the buffer, and
    /// its version count so far.
    private var openItem: (start: Int, versions: UInt32)?

    /// Starts an item record written version by version, straight into
    /// the chunk buffer (exports: no ``ItemState`` in between). Items must
    /// come in ascending id order; ``endItem()`` completes the record.
    public func beginItem(_ id: ItemID) {
        precondition(!finished && openItem == nil)
        if let lastItem { precondition(lastItem < id, "bundle records must be in ascending item id order") }
        lastItem = id
        let start = buffer.count
        buffer.u8(BundleFormat.recordItem)
        buffer.u32(0) // body length, set by endItem
        buffer.id(id)
        buffer.u32(0) // version count, set by endItem
        openItem = (start, 0)
    }

    /// Appends a version to the open record. Versions must come sorted by
    /// (register id, dot replica, dot counter); `vector` is an encoded
    /// ``VersionVector`` and `register` and `replica` 16 bytes each.
    public func appendVersion(
        register: some Collection<UInt8>, replica: some Collection<UInt8>, counter: UInt64, vector: some Collection<UInt8>,
        writtenAt: Int64, isTombstone: Bool, payload: some Collection<UInt8>
    ) {
        precondition(openItem != nil && register.count == 16 && replica.count == 16)
        buffer.bytes(register)
        buffer.bytes(replica)
        buffer.u64(counter)
        buffer.bytes(vector)
        buffer.i64(writtenAt)
        buffer.u8(isTombstone ? 1 : 0)
        buffer.blob32(payload)
        openItem!.versions += 1
    }

    /// Completes the record that ``beginItem(_:)`` opened.
    public func endItem() throws(BundleError) {
        guard let (start, versions) = openItem else { preconditionFailure("no open item record") }
        precondition(versions > 0, "an item record needs at least one version")
        openItem = nil
        buffer.setU32(UInt32(buffer.count - start - 5), at: start + 1)
        buffer.setU32(versions, at: start + 5 + 16)
        recordsWritten += 1
        try flushFullChunks()
    }

    private func flushFullChunks() throws(BundleError) {
        var start = 0
        // Keep at least one byte back: the final chunk is pushed by finish().
        while buffer.count - start > BundleFormat.chunkSize {
            try pushChunk(buffer.data[start..<start + BundleFormat.chunkSize], final: false)
            start += BundleFormat.chunkSize
        }
        if start > 0 { buffer.removeFirst(start) }
    }

    /// Pushes the remaining plaintext as the FINAL chunk.
    public func finish() throws(BundleError) {
        precondition(!finished && openItem == nil)
        finished = true
        try pushChunk(buffer.data[...], final: true)
        buffer = ByteWriter()
        if let signer, let digest {
            // The signature is not itself hashed: emit would absorb it.
            let signature = signer.sign(digest.finish())
            try output.writeBytes(signature)
            bytesWritten += signature.count
        }
    }
}

/// Reads a bundle chunk by chunk and yields its records. Creating it
/// authenticates the header (first chunk); ``next()`` returns nil only
/// after the FINAL chunk was verified, every record was read, the record
/// count matched and nothing follows.
public final class BundleReader {
    public let header: BundleHeader
    private let input: any BundleInput
    private let stream: SecretStream.Reader
    private var chunk: [UInt8] = []
    private var offset = 0
    private var sawFinal = false
    public private(set) var recordsRead: UInt64 = 0
    public private(set) var chunksRead = 0
    private var lastItem: ItemID?
    /// For each replica, the highest counter any version's vector in the
    /// records read so far holds (see ``BundleValidation/backedSummary``).
    public private(set) var evidence: [ReplicaID: UInt64] = [:]
    /// Format 6: the digest of every byte read so far (the signature covers it).
    private let digest: StreamingDigest?
    /// Format 6: whether the signature after the FINAL chunk was verified
    /// (``next()`` returned nil).
    public private(set) var signatureVerified = false

    /// Continues after ``BundleHeader/read(from:)``: reads the stream header
    /// and the first chunk, whose associated data is `prefix`.
    public init(header: BundleHeader, prefix: [UInt8], input: any BundleInput, bundleKey: SecretBytes) throws(BundleError) {
        self.header = header
        self.input = input
        try BundleValidation.check(header: header)
        if header.publisher != nil {
            digest = StreamingDigest()
            digest!.update(prefix)
        } else {
            digest = nil
        }
        let sh = try input.readBytes(SecretStream.headerLength)
        digest?.update(sh)
        guard sh.count == SecretStream.headerLength else { throw .truncated(part: "stream") }
        do { stream = try SecretStream.Reader(key: bundleKey, header: sh) } catch { throw .authenticationFailed }
        try pull(associatedData: prefix)
    }

    private func pull(associatedData: [UInt8]) throws(BundleError) {
        let lenBytes = try input.readBytes(4)
        guard lenBytes.count == 4 else { throw .truncated(part: "stream") }
        let len = Int(UInt32(lenBytes[0]) << 24 | UInt32(lenBytes[1]) << 16 | UInt32(lenBytes[2]) << 8 | UInt32(lenBytes[3]))
        guard len >= SecretStream.overhead, len <= BundleFormat.maxChunkCiphertext else {
            // A length outside the bounds can only come from corruption.
            throw .authenticationFailed
        }
        let ct = try input.readBytes(len)
        guard ct.count == len else { throw .truncated(part: "stream") }
        if let digest {
            digest.update(lenBytes)
            digest.update(ct)
        }
        let result: (message: [UInt8], tag: SecretStream.Tag)
        do { result = try stream.pull(ct, associatedData: associatedData) } catch { throw .authenticationFailed }
        switch result.tag {
        case .message: break
        case .final: sawFinal = true
        case .push, .rekey: throw .malformedRecord("a stream chunk with a tag other than MESSAGE or FINAL")
        }
        chunksRead += 1
        chunk = result.message
        offset = 0
    }

    /// Exactly `n` plaintext bytes, pulling chunks as needed.
    private func take(_ n: Int) throws(BundleError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(n)
        while out.count < n {
            if offset == chunk.count {
                if sawFinal { throw .malformedRecord("the final chunk ends inside a record") }
                try pull(associatedData: [])
                continue
            }
            let k = min(n - out.count, chunk.count - offset)
            out.append(contentsOf: chunk[offset..<offset + k])
            offset += k
        }
        return out
    }

    /// Whether the plaintext is exhausted (pulls empty or further chunks
    /// until data or FINAL).
    private func atEnd() throws(BundleError) -> Bool {
        while offset == chunk.count {
            if sawFinal { return true }
            try pull(associatedData: [])
        }
        return false
    }

    /// The body length in a record head (type at `i`, length after it).
    private static func recordLength(_ b: [UInt8], at i: Int) -> Int {
        Int(UInt32(b[i + 1]) << 24 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 8 | UInt32(b[i + 4]))
    }

    /// The next item record, or nil at the verified end of the bundle.
    public func next() throws(BundleError) -> ItemState? {
        if try atEnd() {
            if let digest, let publisher = header.publisher, !signatureVerified {
                let signature = try input.readBytes(BundleFormat.signatureLength)
                guard signature.count == BundleFormat.signatureLength else { throw .truncated(part: "signature") }
                guard MemberPublicKey.isValidSignature(signature, of: digest.finish(), signKey: publisher) else {
                    throw .ruleBroken(.signature, "the signature does not match the bundle and the key of its publisher")
                }
                signatureVerified = true
            }
            let extra = try input.readBytes(1)
            guard extra.isEmpty else { throw .trailingData }
            if let expected = header.recordCount, expected != recordsRead {
                throw .malformedRecord("the header announces \(expected) records but the bundle holds \(recordsRead)")
            }
            return nil
        }
        let state: ItemState
        if chunk.count - offset >= 5, case let len = Self.recordLength(chunk, at: offset), chunk.count - offset - 5 >= len {
            // The whole record is in this chunk (nearly always): decode it
            // in place.
            guard chunk[offset] == BundleFormat.recordItem else { throw .malformedRecord("unknown record type \(chunk[offset])") }
            guard len <= BundleFormat.maxRecordLength else { throw .malformedRecord("a record of \(len) bytes exceeds the limit") }
            var r = ByteReader(chunk, range: offset + 5..<offset + 5 + len)
            offset += 5 + len
            state = try BundleRecord.decodeItem(reading: &r)
        } else {
            let head = try take(5)
            guard head[0] == BundleFormat.recordItem else { throw .malformedRecord("unknown record type \(head[0])") }
            let len = Self.recordLength(head, at: 0)
            guard len <= BundleFormat.maxRecordLength else { throw .malformedRecord("a record of \(len) bytes exceeds the limit") }
            state = try BundleRecord.decodeItem(body: try take(len))
        }
        if let lastItem, !(lastItem < state.id) { throw .malformedRecord("item records out of order or repeated") }
        lastItem = state.id
        try BundleValidation.check(record: state, header: header)
        for versions in state.registers.values {
            for v in versions {
                for e in v.vector.entries where e.counter > evidence[e.replica, default: 0] { evidence[e.replica] = e.counter }
            }
        }
        recordsRead += 1
        if let expected = header.recordCount, recordsRead > expected {
            throw .malformedRecord("the bundle holds more records than its header announces")
        }
        return state
    }
}
