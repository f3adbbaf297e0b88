import Foundation

/// An `InputStream` over bytes already in memory, without copying them:
/// `InputStream(data:)` copies its data first (on Linux), which for a
/// KeePass database's decrypted XML (85 MB at 100,000 entries) doubled
/// the import's largest allocation (docs/benchmarks.md). XMLParser reads
/// it in chunks, as it reads a file.
final class BytesInputStream: InputStream {
    private let bytes: [UInt8]
    private var at = 0
    private var status: Stream.Status = .notOpen

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        super.init(data: Data())
    }

    override func open() { status = .open }

    override func close() { status = .closed }

    override var streamStatus: Stream.Status { status }

    override var streamError: (any Error)? { nil }

    override var hasBytesAvailable: Bool { status == .open && at < bytes.count }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard status == .open else { return status == .atEnd ? 0 : -1 }
        let n = min(max(0, len), bytes.count - at)
        guard n > 0 else {
            status = .atEnd
            return 0
        }
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + at, count: n) }
        at += n
        return n
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }
}
