import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A change to the vault file, seen by ``Coffer/changes``.
public struct VaultChange: Sendable, Equatable {
    /// The names of the items added, changed or deleted, sorted. Empty
    /// when the change touched no item (a passphrase change, the replica
    /// summary after a sync) or when the vault file was replaced. For a
    /// ``Coffer`` of a service (``Coffer/open(service:_:at:)``), only the
    /// items of its folder, named relative to it.
    public var items: [String]
    /// The file at the vault's path is no longer the one this ``Coffer``
    /// has open (restored from a backup, replaced by a copy, removed):
    /// open it again to see its content.
    public var fileReplaced: Bool
    /// When the change was noticed.
    public var observedAt: Date
    /// The vault is locked for this ``Coffer``: ``Coffer/lock()`` was
    /// called, or the shell session it was opened with ended (locked or
    /// expired). Its keys are wiped and every call throws
    /// ``CofferError/Kind/locked``; ``items`` is empty, and this is the
    /// sequence's last change (it ends after it). Open the vault again to
    /// go on.
    public var locked: Bool

    public init(items: [String], fileReplaced: Bool = false, observedAt: Date = Date(), locked: Bool = false) {
        self.items = items
        self.fileReplaced = fileReplaced
        self.observedAt = observedAt
        self.locked = locked
    }
}

extension Coffer {
    /// How often ``changes`` looks at the vault: every 250 ms.
    public static let defaultChangeInterval: Duration = .milliseconds(250)

    /// Changes to the vault, as they happen: an `AsyncSequence` that yields
    /// after every committed write to the vault file, by another process
    /// (`coffer edit`, `coffer sync`, another app), by another `Coffer` of
    /// this process, or by this one. An app that runs long reloads a
    /// credential when an item it uses is in ``VaultChange/items``:
    ///
    /// ```swift
    /// for await change in coffer.changes where change.items.contains("openai") {
    ///     key = try await coffer.string(for: "openai")
    /// }
    /// ```
    ///
    /// Latency: at most ``defaultChangeInterval`` (250 ms) after the write
    /// commits, plus the time to read the changed items' names (one
    /// decryption each). Writes that commit between two looks come as one
    /// change. See ``changes(every:)`` to choose the interval.
    ///
    /// Each access starts an independent sequence (its own SQLite
    /// connection, which sees every commit made through any other); it
    /// stops when the loop over it ends or its task is cancelled. Changes
    /// made before the access are not reported.
    ///
    /// When the vault gets locked (``lock()``, or the end of the shell
    /// session this `Coffer` was opened with, which the sequence checks at
    /// each look), the sequence yields one change whose
    /// ``VaultChange/locked`` is true, and ends.
    public var changes: AsyncStream<VaultChange> { changes(every: Self.defaultChangeInterval) }

    /// ``changes`` looking every `interval` (at least 10 ms).
    ///
    /// How it works: a background task asks SQLite's `PRAGMA data_version`
    /// on a connection of its own every `interval`; the value changes when
    /// any other connection commits. It then compares the clear item rows
    /// (ids, update times, delete and conflict flags, name hashes) with
    /// the previous look and decrypts the names of the items that differ.
    /// It also notices when the path names another file than before, and,
    /// for a `Coffer` opened through a session, whether the session file
    /// is still there and unexpired (one small file read per look; a look
    /// does not count as a use of the session).
    public func changes(every interval: Duration) -> AsyncStream<VaultChange> {
        let interval = max(interval, .milliseconds(10))
        let (stream, continuation) = AsyncStream.makeStream(of: VaultChange.self, bufferingPolicy: .bufferingNewest(64))
        let watcher = ChangeWatcher(vault: vault, session: session, prefix: prefix)
        watcher.queue.sync { watcher.takeBaseline() }
        let task = Task.detached {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { break }
                let change: VaultChange? = await withCheckedContinuation { c in
                    watcher.queue.async { c.resume(returning: watcher.lookUnlessLocked()) }
                }
                if let change {
                    continuation.yield(change)
                    if change.locked { break }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The state of one ``Coffer/changes(every:)`` sequence. Touched only on
/// its queue.
final class ChangeWatcher: @unchecked Sendable {
    struct Fingerprint: Equatable {
        var updatedAt: Int64
        var isDeleted: Bool
        var hasConflict: Bool
        var nameHash: [UInt8]?
    }

    let vault: Vault
    /// The session the `Coffer` was opened with, checked at each look.
    let session: SessionLease?
    /// The service folder (`apps/SERVICE/`) names are reported relative
    /// to, or "" for the whole vault.
    let prefix: String
    let queue = DispatchQueue(label: "coffer.vault.changes")
    private var store: VaultStore?
    private var file: FileIdentity?
    private var dataVersion: Int?
    private var rows: [ItemID: Fingerprint] = [:]

    init(vault: Vault, session: SessionLease? = nil, prefix: String = "") {
        self.vault = vault
        self.session = session
        self.prefix = prefix
    }

    /// One look, holding the keys (a lock waits for it to decrypt the
    /// names it needs); a locked change once the vault is locked,
    /// including by the end of the session.
    func lookUnlessLocked() -> VaultChange? {
        Coffer.lockIfSessionEnded(vault, session, isUse: false)
        do {
            return try vault.keys.use { () throws(CofferError) -> VaultChange? in scoped(look()) }
        } catch {
            return VaultChange(items: [], locked: true)
        }
    }

    /// `change` as a service's `Coffer` sees it: only the items of its
    /// folder, named relative to it; nil when the change touched items
    /// but none of them.
    func scoped(_ change: VaultChange?) -> VaultChange? {
        guard var change, !prefix.isEmpty, !change.items.isEmpty else { return change }
        change.items = change.items.compactMap { Coffer.relativeName($0, prefix: prefix) }
        return change.items.isEmpty ? nil : change
    }

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    static func identity(_ path: String) -> FileIdentity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// Opens the connection and records what the vault holds now.
    func takeBaseline() {
        file = ChangeWatcher.identity(vault.path)
        store = try? VaultStore.open(path: vault.path)
        guard let store else {
            dataVersion = nil
            rows = [:]
            return
        }
        let snapshot = try? store.read { db in (try Self.version(db), try Self.fingerprints(db)) }
        dataVersion = snapshot?.0
        rows = snapshot?.1 ?? [:]
    }

    static func version(_ db: StoreConnection) throws -> Int { try Queries.dataVersion(db) }

    static func fingerprints(_ db: StoreConnection) throws -> [ItemID: Fingerprint] {
        var out: [ItemID: Fingerprint] = [:]
        for r in try Queries.itemRows(db, includeDeleted: true) {
            out[r.id] = Fingerprint(updatedAt: r.updatedAt, isDeleted: r.isDeleted, hasConflict: r.hasConflict, nameHash: r.nameHash)
        }
        return out
    }

    /// One look: a change since the previous look, or nil.
    func look() -> VaultChange? {
        let now = ChangeWatcher.identity(vault.path)
        if now != file {
            // Another file (or none) is at the path now.
            let wasThere = file != nil
            takeBaseline()
            return wasThere || now != nil ? VaultChange(items: [], fileReplaced: true) : nil
        }
        guard let store else {
            takeBaseline()
            return nil
        }
        do {
            return try store.read { db -> VaultChange? in
                let version = try Self.version(db)
                guard version != dataVersion else { return nil }
                dataVersion = version
                let current = try Self.fingerprints(db)
                var changed: [ItemID] = []
                for (id, print) in current where rows[id] != print { changed.append(id) }
                for id in rows.keys where current[id] == nil { changed.append(id) }
                rows = current
                var names: [String] = []
                for id in changed {
                    if let name = try? name(db, id), !Vault.isReserved(name) { names.append(name) }
                }
                return VaultChange(items: Array(Set(names)).sorted())
            }
        } catch {
            // Busy or unreadable for a moment: look again next time.
            return nil
        }
    }

    /// The shown name of item `id`, decrypted.
    private func name(_ db: StoreConnection, _ id: ItemID) throws -> String? {
        let state = try Queries.itemState(db, id: id)
        guard let shown = Register.shown(state.registers[.name] ?? []), !shown.isTombstone else { return nil }
        return try vault.open(shown, item: id, register: .name).text
    }
}
