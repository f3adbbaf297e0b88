import CofferKit
import CofferTestSupport
import Foundation
import Testing

@Suite("Coffer front door: concurrency")
struct ConcurrencyTests {
    @Test func manyTasksReadAndWriteOneSharedCoffer() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("shared-0", for: "shared", kind: .note)
        // 64 tasks: each writes its own item, overwrites the shared one and
        // reads both back; every read sees a value some task wrote.
        let results = try await withThrowingTaskGroup(of: (Int, String?, String?).self) { group in
            for i in 0..<64 {
                group.addTask {
                    try await c.set("value-\(i)", for: "task/\(i)", kind: .note)
                    try await c.set("shared-\(i + 1)", for: "shared", kind: .note)
                    return (i, try await c.string(for: "task/\(i)"), try await c.string(for: "shared"))
                }
            }
            var out: [(Int, String?, String?)] = []
            for try await r in group { out.append(r) }
            return out
        }
        #expect(results.count == 64)
        for (i, own, shared) in results {
            #expect(own == "value-\(i)")
            #expect(shared?.hasPrefix("shared-") == true && shared != "shared-0")
        }
        #expect(try await c.items(matching: "task/*").count == 64)
        // The shared item holds one version per write: 65 in its history.
        #expect(try c.vault.history("shared").filter { $0.field == "notes" }.count == 65)
    }

    @Test func twoCoffersOnOneFileAndConcurrentOpens() async throws {
        let box = Sandbox()
        _ = try await box.create()
        // Several opens at once: each runs Argon2id on a thread of its own.
        let opened = try await withThrowingTaskGroup(of: Coffer.self) { group in
            for _ in 0..<4 { group.addTask { try await Coffer.open(at: box.vaultPath, passphrase: Sandbox.passphrase) } }
            var out: [Coffer] = []
            for try await c in group { out.append(c) }
            return out
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, c) in opened.enumerated() {
                group.addTask { for i in 0..<10 { try await c.set("v\(i)", for: "c\(n)/i\(i)", kind: .note) } }
            }
            try await group.waitForAll()
        }
        #expect(try await opened[0].items().count == 40)
    }
}

@Suite("Coffer front door: changes")
struct ChangeTests {
    @Test func aChangeMadeByTheCommandLineIsSeen() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("first-value-0000", for: "app/key")
        let changes = c.changes(every: .milliseconds(50))
        let file = try box.passphraseFile()
        async let seen = firstChange(changes, within: 60) { $0.items.contains("app/key") }
        let edit = try CofferCLI.run(["edit", "app/key", "--field", "key=second-value-0000", "--vault", box.vaultPath, "--passphrase-file", file])
        #expect(edit.status == 0, "\(edit.stderr)")
        let change = await seen
        #expect(change?.items == ["app/key"])
        #expect(change?.fileReplaced == false)
        #expect(try await c.string(for: "app/key") == "second-value-0000")
    }

    @Test func writesOfAnotherCofferAndDeletesAreSeenAndQuietVaultsSayNothing() async throws {
        let box = Sandbox()
        let c = try await box.create()
        try await c.set("v", for: "watched", kind: .note)
        let other = try await Coffer.open(at: box.vaultPath, passphrase: Sandbox.passphrase)
        // Nothing happens: nothing is reported.
        #expect(await firstChange(c.changes(every: .milliseconds(20)), within: 0.3) { _ in true } == nil)

        let changes = c.changes(every: .milliseconds(20))
        async let added = firstChange(changes, within: 60) { $0.items.contains("new/one") }
        try await other.set("x", for: "new/one", kind: .note)
        let addition = await added
        #expect(addition?.items == ["new/one"])

        let again = c.changes(every: .milliseconds(20))
        async let removed = firstChange(again, within: 60) { $0.items.contains("watched") }
        try await other.remove("watched")
        let removal = await removed
        #expect(removal?.items == ["watched"])
    }

    @Test func aReplacedFileIsReported() async throws {
        let box = Sandbox()
        let c = try await box.create()
        let changes = c.changes(every: .milliseconds(20))
        async let replaced = firstChange(changes, within: 60) { $0.fileReplaced }
        let copy = box.path("copy.coffer")
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        #expect(rename(copy, box.vaultPath) == 0)
        #expect(await replaced?.fileReplaced == true)
    }
}

@Suite("Coffer front door: bundles and sync")
struct ReplicationTests {
    @Test func exportCloneImportAndSync() async throws {
        let box = Sandbox()
        let a = try await box.create()
        try await a.set("from-a-0000000000", for: "shared/a")
        try await a.set("local-secret", for: "only-here", kind: .note, policy: .localOnly)
        let bundle = box.path("a.coffer-bundle")
        let report = try await a.export(to: bundle)
        #expect(report.kind == .full && report.items == 1, "local-only items stay home")

        let clonePath = box.path("b.coffer")
        _ = try Vault.clone(bundleAt: bundle, to: clonePath, passphrase: SecretBytes(copying: Array(Sandbox.passphrase.utf8)))
        let b = try await Coffer.open(at: clonePath, passphrase: Sandbox.passphrase)
        #expect(try await b.string(for: "shared/a") == "from-a-0000000000")
        #expect(try await b.item(named: "only-here") == nil)

        try await b.set("from-b-0000000000", for: "shared/b")
        let back = box.path("b.coffer-bundle")
        try await b.export(to: back)
        let changes = a.changes(every: .milliseconds(20))
        async let seen = firstChange(changes, within: 60) { $0.items.contains("shared/b") }
        let imported = try await a.importBundle(at: back)
        #expect(imported.added == 1)
        #expect(await seen != nil, "an import is a change like any other")
        #expect(try await a.string(for: "shared/b") == "from-b-0000000000")

        // A damaged bundle is refused and the vault is unchanged.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: back))
        bytes[bytes.count - 5] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: box.path("bad.coffer-bundle")))
        let before = try await a.items()
        await expectError(.badData) { () async throws(CofferError) in try await a.importBundle(at: box.path("bad.coffer-bundle")) }
        #expect(try await a.items() == before)

        // Sync through a folder both replicas use.
        let dir = box.path("sync")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try await a.set("edited-on-a-000000", for: "shared/a")
        #expect(try await a.sync(with: dir).wroteOwnBundle)
        let r = try await b.sync(with: dir)
        #expect(r.merged.count == 1)
        #expect(try await b.string(for: "shared/a") == "edited-on-a-000000")
        await expectError(.fileNotFound) { () async throws(CofferError) in try await a.importBundle(at: box.path("missing")) }
    }
}

@Suite("Coffer front door: blocking work off the cooperative pool")
struct OffPoolTests {
    /// Sixteen opens whose passphrase has not arrived yet, far more than
    /// the cooperative pool has threads (one per core), each blocked
    /// reading its pipe. A task on the pool then writes the passphrases.
    /// Were unlocking done on pool threads, they would all be stuck in
    /// `read` and that task could never run: a watchdog thread would have
    /// to write them after 60 s, and the test fails.
    @Test func unlockingNeverHoldsAPoolThread() async throws {
        let box = Sandbox()
        _ = try await box.create()
        let count = 16
        var pipes: [(read: Int32, write: Int32)] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            pipes.append((fds[0], fds[1]))
        }
        let writer = PipeWriter(pipes.map(\.write))
        let watchdog = Thread {
            if !writer.done.wait(timeout: 60) { writer.writeAll(byWatchdog: true) }
        }
        watchdog.start()
        let readers = pipes.map(\.read)
        async let opened: Int = withThrowingTaskGroup(of: Void.self) { group in
            for fd in readers {
                group.addTask { _ = try await Coffer.open(.fileDescriptor(fd), at: box.vaultPath) }
            }
            try await group.waitForAll()
            return readers.count
        }
        await Task { writer.writeAll(byWatchdog: false) }.value
        #expect(try await opened == count)
        #expect(!writer.watchdogWrote, "the pool could not run a task while opens waited for input")
        for fd in readers { close(fd) }
    }
}

/// Writes the passphrase to every pipe once, then closes it.
final class PipeWriter: @unchecked Sendable {
    private let lock = NSLock()
    private var fds: [Int32]
    private(set) var watchdogWrote = false
    let done = DispatchSemaphoreBox()

    init(_ fds: [Int32]) { self.fds = fds }

    func writeAll(byWatchdog: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard !fds.isEmpty else { return }
        watchdogWrote = byWatchdog
        let bytes = Array(Sandbox.passphrase.utf8)
        for fd in fds {
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        fds = []
        done.signal()
    }
}

final class DispatchSemaphoreBox: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    /// Whether it was signalled within `seconds`.
    func wait(timeout seconds: Double) -> Bool { semaphore.wait(timeout: .now() + seconds) == .success }
}
