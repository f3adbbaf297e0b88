import Foundation

/// Batches handed from one producing thread to one consuming thread, in
/// order, at most `maxAhead` batches queued (memory stays bounded), the
/// producer's error delivered after the batches before it. Both of
/// Coffer's two-thread imports use it: a bundle's records decoded while
/// the vault writes (``ImportPipeline``), and another tool's entries parsed
/// while they are stored (``InterchangeStream``).
final class BatchHandOff<Element, Failure: Error>: @unchecked Sendable {
    private let maxAhead: Int
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var batches: [[Element]] = []
    private var ended = false
    private var failure: Failure?
    private var cancelled = false
    private var producerDone = false

    init(maxAhead: Int) { self.maxAhead = maxAhead }

    /// Producer: queues `batch` (nothing when empty), waiting while
    /// `maxAhead` batches are queued; false once the consumer has stopped
    /// (the producer should stop too).
    func push(_ batch: [Element]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while batches.count >= maxAhead && !cancelled { condition.wait() }
        if cancelled { return false }
        if !batch.isEmpty {
            batches.append(batch)
            condition.broadcast()
        }
        return true
    }

    /// Producer, last: no more batches; `failure` (if any) is thrown to
    /// the consumer after the batches queued before it.
    func finish(failure: Failure?) {
        condition.lock()
        ended = true
        self.failure = failure
        producerDone = true
        condition.broadcast()
        condition.unlock()
    }

    /// Consumer: the next batch, nil after the last; throws the producer's
    /// failure once every batch before it was taken.
    func next() throws(Failure) -> [Element]? {
        condition.lock()
        defer { condition.unlock() }
        while batches.isEmpty && !ended { condition.wait() }
        if !batches.isEmpty {
            condition.broadcast()
            return batches.removeFirst()
        }
        if let failure { throw failure }
        return nil
    }

    /// Consumer, when done (on success or failure): stops the producer and
    /// waits until it has called ``finish(failure:)``.
    func stop() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        while !producerDone { condition.wait() }
        condition.unlock()
    }
}
