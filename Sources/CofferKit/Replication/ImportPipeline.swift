import CofferStore
import CofferSync
import Foundation

/// What the decoding thread hands to the writing thread for one record.
enum DecodedRecord: Sendable {
    /// Every version was already seen here.
    case unchanged
    /// An item new to the vault, every version authenticated; its rows
    /// come in ``write(_:)`` statements (imports into a vault without
    /// items).
    case added(ItemID, hasConflict: Bool, versions: Int, listed: Bool)
    /// The unseen versions, to merge with what the vault holds.
    case merge(ItemState)
    /// Rows to insert, in order.
    case write(PendingInsert)
}

/// A new item ready to insert.
struct NewItem: Sendable {
    var row: ItemRow
    /// The sealed integrity record.
    var record: [UInt8]
    var state: ItemState
    var versions: Int
    /// Whether `coffer ls` lists it (live, not one of the vault's own
    /// reserved items): a clone counts these instead of listing the vault.
    var listed: Bool
}

/// Runs the CPU half of an import on a second thread: reading and
/// authenticating the stream, decoding records, and for new items
/// decrypting every version and hashing the name. The calling thread,
/// inside the database transaction, writes what arrives. On two cores an
/// import then takes about the longer of the two halves instead of their
/// sum. Records travel in order, in batches of 64, at most 8 batches
/// ahead (memory stays bounded). The first error ends the stream and is
/// thrown by ``nextBatch()`` after the records decoded before it.
final class ImportPipeline: @unchecked Sendable {
    static let batchSize = 64
    static let maxBatchesAhead = 8

    private let reader: BundleReader
    private let path: String
    private let transform: @Sendable (ItemState) throws -> [DecodedRecord]
    private let atEnd: @Sendable () -> [DecodedRecord]
    private let handOff = BatchHandOff<DecodedRecord, any Error>(maxAhead: ImportPipeline.maxBatchesAhead)

    /// `transform` turns each record into what the writer needs; `atEnd`
    /// adds what is left after the last record. Both run on the decoding
    /// thread only.
    init(
        reader: BundleReader, path: String, transform: @escaping @Sendable (ItemState) throws -> [DecodedRecord],
        atEnd: @escaping @Sendable () -> [DecodedRecord]
    ) {
        self.reader = reader
        self.path = path
        self.transform = transform
        self.atEnd = atEnd
    }

    /// Starts the decoding thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "coffer-import-decode"
        thread.start()
    }

    private func run() {
        var batch: [DecodedRecord] = []
        batch.reserveCapacity(Self.batchSize)
        var error: (any Error)?
        do {
            while true {
                let next: ItemState?
                do { next = try reader.next() } catch { throw CofferError.bundle(error, path: path) }
                guard let incoming = next else {
                    batch.append(contentsOf: atEnd())
                    break
                }
                batch.append(contentsOf: try transform(incoming))
                if batch.count >= Self.batchSize {
                    guard handOff.push(batch) else { break }
                    batch.removeAll(keepingCapacity: true)
                }
            }
            _ = handOff.push(batch)
        } catch let e {
            _ = handOff.push(batch)
            error = e
        }
        handOff.finish(failure: error)
    }

    /// The next batch in bundle order, nil after the last one; throws the
    /// decoding thread's error once the batches before it were taken.
    func nextBatch() throws -> [DecodedRecord]? { try handOff.next() }

    /// Stops the decoding thread and waits for it to exit. Call once the
    /// consumer is done, on success or failure.
    func stop() { handOff.stop() }
}

/// The decoding thread's side of a load into a vault without items: rows
/// are turned into statements there. Used by that thread only.
final class NewItemBuffer: @unchecked Sendable {
    private var rows: NewItemRows

    /// `mac` collects the terms of the rows built here (this thread's
    /// own accumulator, absorbed by the writer at the end).
    init(mac: VaultMAC, integrity: BulkIntegrity = .full) { rows = NewItemRows(mac: mac, integrity: integrity) }

    func add(_ item: NewItem) -> [DecodedRecord] {
        var out: [DecodedRecord] = [.added(item.state.id, hasConflict: item.row.hasConflict, versions: item.versions, listed: item.listed)]
        for p in rows.add(row: item.row, record: item.record, state: item.state) { out.append(.write(p)) }
        return out
    }

    func finish() -> [DecodedRecord] { rows.finish().map { .write($0) } }
}
