import Foundation

/// Entries handed from a reading thread to ``Vault/importEntries(_:options:progress:)``
/// while it stores the ones before: a large file is parsed and stored at
/// the same time (two cores), and only a bounded number of entries is in
/// memory at once instead of the whole file's. The reader's error, if any,
/// ends the import (one transaction: nothing is stored).
public final class InterchangeStream: @unchecked Sendable {
    /// Entries travel in batches of this many (one lock and one wake-up
    /// per batch, not per entry), at most ``maxBatchesAhead`` ahead.
    public static let batchSize = 64
    public static let maxBatchesAhead = 8
    /// At least the number of entries the file holds (an estimate made
    /// before reading, e.g. by counting elements); used to hand out item
    /// ids and for progress. May be 0.
    public let expectedCount: Int

    private let handOff = BatchHandOff<InterchangeEntry, CofferError>(maxAhead: InterchangeStream.maxBatchesAhead)

    // The reader's batch being filled; the import's batch being taken.
    // Each used by its own thread only.
    private var filling: [InterchangeEntry] = []
    private var taking: [InterchangeEntry] = []
    private var taken = 0

    private init(expectedCount: Int) { self.expectedCount = expectedCount }

    /// Starts `read` on a new thread; it hands each entry to ``push(_:)``
    /// and stops when that returns false.
    public static func start(
        expectedCount: Int, _ read: @escaping @Sendable (InterchangeStream) throws(CofferError) -> Void
    ) -> InterchangeStream {
        let stream = InterchangeStream(expectedCount: max(0, expectedCount))
        let thread = Thread {
            var error: CofferError?
            do throws(CofferError) { try read(stream) } catch let e { error = e }
            if error == nil { _ = stream.flush() }
            stream.handOff.finish(failure: error)
        }
        thread.name = "coffer-import-read"
        thread.start()
        return stream
    }

    /// Reader side (its thread only): queues one entry, waiting while the
    /// import is ``maxBatchesAhead`` batches behind; false once the import
    /// has stopped (the reader should stop too).
    public func push(_ entry: InterchangeEntry) -> Bool {
        filling.append(entry)
        return filling.count < Self.batchSize ? true : flush()
    }

    private func flush() -> Bool {
        guard handOff.push(filling) else { return false }
        filling = []
        filling.reserveCapacity(Self.batchSize)
        return true
    }

    /// Import side (one thread): the next entry in file order, nil after
    /// the last; throws the reader's error once the entries before it
    /// were taken.
    func next() throws(CofferError) -> InterchangeEntry? {
        if taken < taking.count {
            taken += 1
            return taking[taken - 1]
        }
        // Batches are never empty: the next one has a first entry.
        guard let batch = try handOff.next() else { return nil }
        taking = batch
        taken = 1
        return taking[0]
    }

    /// Stops the reader (if it is still going) and waits for its thread to
    /// end. Called by the import when it is done, on success or failure.
    func stop() { handOff.stop() }
}
