import CofferStore
import CofferSync
import Foundation

/// Turns an import's new entries into rows on a second thread while the
/// importing thread writes the ones before: the entries' field values and
/// records are sealed and their `INSERT`s built there (NewItemRows), so on
/// two cores the importing thread only decides names, ids and dots and
/// runs statements (docs/import-export.md). Batches are done in the order
/// given, at most ``maxAhead`` of them waiting; the first error is thrown
/// by ``take(leaving:)`` after the statements of the batches before it.
final class EntrySealer: @unchecked Sendable {
    /// One new item: decided on the importing thread, sealed here.
    struct Job: Sendable {
        let id: ItemID
        let name: String
        let entry: InterchangeEntry
        let dot: Dot
        let now: Int64
    }

    static let batchSize = 64
    static let maxAhead = 2

    private let queue = DispatchQueue(label: "coffer-import-seal")
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var finished: [Result<[PendingInsert], any Error>] = []
    private var submitted = 0
    private var failed = false
    // Used on `queue` only.
    private var rows: NewItemRows
    private let seal: (Job) throws -> (row: ItemRow, record: [UInt8], state: ItemState)

    /// `mac`: this thread's own accumulator for the rows built here (the
    /// caller absorbs it once ``finish()`` returned). `seal` runs on the
    /// sealing thread only.
    init(mac: VaultMAC, seal: @escaping (Job) throws -> (row: ItemRow, record: [UInt8], state: ItemState)) {
        rows = NewItemRows(mac: mac)
        self.seal = seal
    }

    /// Queues `jobs` (one batch) for the sealing thread.
    func submit(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        condition.lock()
        submitted += 1
        condition.unlock()
        queue.async { [self] in
            let result: Result<[PendingInsert], any Error>
            if condition.withLock({ failed }) {
                result = .success([])
            } else {
                do {
                    var out: [PendingInsert] = []
                    for job in jobs {
                        let new = try seal(job)
                        out += rows.add(row: new.row, record: new.record, state: new.state)
                    }
                    result = .success(out)
                } catch {
                    result = .failure(error)
                }
            }
            condition.withLock {
                if case .failure = result { failed = true }
                finished.append(result)
                condition.broadcast()
            }
        }
    }

    /// The statements of the batches done so far, in order, after waiting
    /// until at most `pending` submitted batches are not done.
    func take(leaving pending: Int) throws -> [PendingInsert] {
        condition.lock()
        while submitted - finished.count > pending { condition.wait() }
        let done = finished
        finished.removeAll()
        submitted -= done.count
        condition.unlock()
        var out: [PendingInsert] = []
        for r in done { out += try r.get() }
        return out
    }

    /// After the last ``take(leaving:)`` with 0: the statements for the
    /// rows still buffered.
    func finish() -> [PendingInsert] { queue.sync { rows.finish() } }

    /// Waits until the sealing thread is idle (on every way out of the
    /// import, before its keys and transaction go away).
    func stop() {
        condition.withLock { failed = true }
        queue.sync {}
    }
}
