import CofferSync
import Foundation
import GRDB

#if canImport(GRDBSQLite)
internal import GRDBSQLite
#else
internal import SQLite3
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The SQLite file behind a vault. Owns the connection; every query of
/// the vault goes through here.
public final class VaultStore: @unchecked Sendable {
    /// The newest vault format this build reads and writes.
    public static let formatVersion = 8
    /// The format of the integrity data's rules (item records, vault-MAC
    /// terms): format 7 changed only the master key's wrapping (bound to
    /// "this vault has integrity data", docs/key-hierarchy.md), so a vault
    /// whose header says 6 has current integrity data and a legacy
    /// wrapping, upgraded to 7 at its next unlock with the passphrase.
    public static let integrityFormat = 6
    /// The first format whose wrapped master key is bound with
    /// `coffer-wrap-v3` (``KeyHierarchy/WrapBinding/integrity``).
    public static let boundWrapFormat = 7

    public let path: String
    /// The read verbs' connection (``readDirect(_:)``): the file opened
    /// with SQLite's C API alone, until something needs GRDB's queue
    /// (``queue()``: a write, a GRDB read), which closes it and takes over.
    /// GRDB's set-up (its SQL functions, collations and authorizer, each a
    /// scan of the binary's protocol conformances) cost a third of a
    /// `coffer get` (docs/benchmarks.md).
    private nonisolated(unsafe) var direct: OpaquePointer?
    private nonisolated(unsafe) var grdbQueue: DatabaseQueue?
    /// Set while a direct read runs: the store used from inside one of its
    /// own reads is an error, never a deadlock or a connection closed
    /// under a running statement.
    private nonisolated(unsafe) var inDirectRead = false
    private let lock = NSRecursiveLock()
    /// A descriptor holding an exclusive `flock` on a file this process is
    /// creating (-1 for an opened vault): a temporary vault being built is
    /// never swept as litter (docs/reliability.md).
    private let lockFD: Int32

    private init(path: String, queue: DatabaseQueue, lockFD: Int32) {
        self.path = path
        self.grdbQueue = queue
        self.lockFD = lockFD
    }

    private init(path: String, direct: OpaquePointer) {
        self.path = path
        self.direct = direct
        self.lockFD = -1
    }

    deinit {
        if let direct { sqlite3_close_v2(direct) }
        if lockFD >= 0 { close(lockFD) }
    }

    /// What every connection to a vault runs first (GRDB's through
    /// ``configuration()``, the direct one in ``openDirect(_:)``).
    ///
    /// A crash never leaves a half-applied write, and a write that
    /// returned is on the disk: rollback journal (DELETE), the journal and
    /// the file synced before and after the file is written, and (EXTRA
    /// over FULL) the folder synced after the journal is removed, without
    /// which a power cut could bring the journal back and roll a committed
    /// write back. docs/reliability.md, "Which syncs a write makes".
    static let connectionPragmas = ["PRAGMA synchronous = EXTRA", "PRAGMA secure_delete = ON"]
    /// Milliseconds a statement waits for another process's lock.
    static let busyTimeoutMillis: Int32 = 5000

    static func configuration() -> Configuration {
        var config = Configuration()
        config.busyMode = .timeout(Double(busyTimeoutMillis) / 1000)
        config.foreignKeysEnabled = true
        config.label = "coffer.vault"
        // Item payloads are ciphertexts, but keep statement arguments out
        // of any error text all the same.
        config.publicStatementArguments = false
        config.prepareDatabase { db in
            for pragma in connectionPragmas { try db.execute(sql: pragma) }
        }
        return config
    }

    /// Opens an existing vault. Fast path: reads `user_version` and looks
    /// for a trigger (one small `sqlite_master` query in the same read),
    /// and runs migrations only when the file is older than this build.
    /// The file is opened with SQLite's C API (``readDirect(_:)``); GRDB's
    /// queue is built when first needed.
    ///
    /// A trigger is refused (``StoreError/damaged(_:)``) before anything
    /// else is read or written: coffer never creates one, and one planted
    /// with sqlite3 would fire on coffer's own writes (a migration's
    /// included). `allowingTriggers` is for `coffer verify`, which reads
    /// only and names every foreign schema object; an older vault that
    /// needs a migration is refused all the same.
    public static func open(path: String, allowingTriggers: Bool = false) throws(StoreError) -> VaultStore {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == EACCES { throw .permissionDenied(path: path, reason: "a folder on its path cannot be searched by this user") }
            throw .notFound(path: path)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw .notAVault(path: path, reason: "not a regular file")
        }
        do {
            let store = VaultStore(path: path, direct: try openDirect(path))
            let (version, trigger) = try store.readDirect { db in (try Queries.userVersion(db), try Queries.firstTrigger(db)) }
            if version > formatVersion {
                throw StoreError.newerFormat(path: path, found: version, supported: formatVersion)
            }
            if let trigger, !allowingTriggers || version < formatVersion {
                throw StoreError.damaged(
                    "it holds a trigger '\(trigger.name)' on table '\(trigger.table)', which coffer never creates (it would change rows as coffer writes them)")
            }
            if version < formatVersion {
                guard version > 0 else {
                    throw StoreError.notAVault(path: path, reason: "no Coffer schema in this SQLite file")
                }
                do { try Migrations.migrator.migrate(try store.queue()) } catch let e as DatabaseError where e.resultCode == .SQLITE_ERROR {
                    // A migration's SQL failed ("duplicate column name",
                    // "table … already exists"): the schema is not the one
                    // its format number says, so it was changed outside
                    // coffer. The migration's transaction was rolled back.
                    throw StoreError.damaged("its schema does not match vault format \(version) (\(e.message ?? "SQL error"))")
                }
            }
            store.removeStaleJournal()
            return store
        } catch let e as StoreError {
            throw e
        } catch let e as DatabaseError {
            throw translate(e, path: path).naming(path)
        } catch let e as SQLiteFailure {
            throw translate(code: e.code, message: e.message, path: path).naming(path)
        } catch {
            throw .database(String(describing: error))
        }
    }

    /// The vault opened with SQLite's C API, set up as GRDB sets up its
    /// connection for coffer (``configuration()``): extended result codes,
    /// the busy timeout, foreign keys, the ``connectionPragmas``; and
    /// `query_only`, as GRDB's reads are (``removeStaleJournal()`` lifts it
    /// for its one write).
    static func openDirect(_ path: String) throws -> OpaquePointer {
        var handle: OpaquePointer?
        // Read-write as GRDB opens it (a hot journal left by a killed
        // writer is rolled back by the first read), never created.
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil)
        guard rc == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(nil, rc)
            sqlite3_close_v2(handle)
            throw failure
        }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMillis)
        var code = sqlite3_exec(handle, "PRAGMA foreign_keys = ON", nil, nil, nil)
        // One statement at a time: joining the strings would cost a scan of
        // the binary's protocol conformances (`joined` on `String`s).
        for pragma in connectionPragmas where code == SQLITE_OK { code = sqlite3_exec(handle, pragma, nil, nil, nil) }
        if code == SQLITE_OK { code = sqlite3_exec(handle, "PRAGMA query_only = 1", nil, nil, nil) }
        guard code == SQLITE_OK else {
            let failure = SQLiteFailure(handle, code)
            sqlite3_close_v2(handle)
            throw failure
        }
        return handle
    }

    /// Whether GRDB's queue was built (tests: the read verbs never build it).
    var hasGRDBQueue: Bool {
        lock.lock()
        defer { lock.unlock() }
        return grdbQueue != nil
    }

    /// GRDB's queue on the vault, built on first use; the direct
    /// connection is closed first (one connection at a time).
    func queue() throws -> DatabaseQueue {
        lock.lock()
        defer { lock.unlock() }
        if let grdbQueue { return grdbQueue }
        guard !inDirectRead else { throw StoreError.database("the vault store was used inside one of its own reads") }
        if let direct {
            sqlite3_close_v2(direct)
            self.direct = nil
        }
        let queue = try DatabaseQueue(path: path, configuration: Self.configuration())
        grdbQueue = queue
        return queue
    }

    /// A writer killed before its journal was complete leaves a journal
    /// that is not "hot": SQLite ignores it and removes it only at the
    /// next write. Removes it now (docs/reliability.md), under a RESERVED
    /// lock: no other writer can be using it, and taking the lock already
    /// rolled back a hot one. Costs one `access` when there is none;
    /// failures (a read-only vault, a live writer: never waited for) leave it
    /// for later.
    func removeStaleJournal() {
        let journal = path + "-journal"
        guard access(journal, F_OK) == 0 else { return }
        lock.lock()
        defer { lock.unlock() }
        if let handle = direct {
            // Never wait: a live writer's journal is its own business.
            guard sqlite3_exec(handle, "PRAGMA query_only = 0; PRAGMA busy_timeout = 0", nil, nil, nil) == SQLITE_OK else { return }
            defer { sqlite3_exec(handle, "PRAGMA busy_timeout = \(Self.busyTimeoutMillis); PRAGMA query_only = 1", nil, nil, nil) }
            guard sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { return }
            if access(journal, F_OK) == 0 { unlink(journal) }
            if sqlite3_exec(handle, "COMMIT", nil, nil, nil) != SQLITE_OK { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            return
        }
        guard let queue = grdbQueue else { return }
        try? queue.inDatabase { db in
            try db.execute(sql: "PRAGMA busy_timeout = 0")
            defer { try? db.execute(sql: "PRAGMA busy_timeout = \(Self.busyTimeoutMillis)") }
            try db.inTransaction(.immediate) {
                if access(journal, F_OK) == 0 { unlink(journal) }
                return .commit
            }
        }
    }

    /// Creates a new vault file (mode 0600, in a folder created 0700 when
    /// missing) and writes its header and local replica in one transaction.
    /// Refuses to overwrite anything.
    /// `mac` (empty, under the vault-MAC key) receives the terms of the
    /// first rows; the stored MAC starts as their sum.
    public static func create(path: String, header: VaultHeader, replica: ReplicaID, host: String?, mac: VaultMAC) throws(StoreError) -> VaultStore {
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty {
            try makeDirectory(dir)
        }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw .alreadyExists(path: path) }
            throw .cannotCreate(path: path, reason: String(cString: strerror(errno)))
        }
        fchmod(fd, 0o600)
        _ = flock(fd, LOCK_EX | LOCK_NB)
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration())
            try Migrations.migrator.migrate(queue)
            var st = stat()
            stat(path, &st)
            try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO vault (singleton, formatVersion, vaultId, kdfAlgorithm, kdfMemoryKiB,
                          kdfIterations, kdfParallelism, kdfSalt, wrappedMasterKey, createdAt)
                        VALUES (1, ?, ?, 'argon2id', ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        header.formatVersion, Data(header.vaultID.bytes), Int64(header.kdfMemoryKiB),
                        Int64(header.kdfIterations), Int64(header.kdfParallelism), Data(header.kdfSalt),
                        Data(header.wrappedMasterKey), header.createdAt,
                    ])
                try db.execute(
                    sql: "INSERT INTO localReplica (singleton, replicaId, counter, boundHost, boundInode) VALUES (1, ?, 0, ?, ?)",
                    arguments: [Data(replica.bytes), host, Int64(st.st_ino)])
                try db.execute(
                    sql: "INSERT INTO replica (replicaId, counter) VALUES (?, 0)", arguments: [Data(replica.bytes)])
                mac.toggle(IntegrityTerm.header(header))
                mac.toggle(IntegrityTerm.local(replica, counter: 0))
                mac.toggle(IntegrityTerm.replica(replica, counter: 0))
                try Queries.setStoredMAC(db, mac)
            }
            return VaultStore(path: path, queue: queue, lockFD: fd)
        } catch {
            close(fd)
            unlink(path)
            if let e = error as? DatabaseError { throw translate(e, path: path) }
            throw .database(String(describing: error))
        }
    }

    /// Creates `dir` and its parents; the last component gets mode 0700.
    public static func makeDirectory(_ dir: String) throws(StoreError) {
        var st = stat()
        if stat(dir, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw .cannotCreate(path: dir, reason: "not a directory")
            }
            return
        }
        let parent = (dir as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != dir {
            try makeDirectory(parent)
        }
        if mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw .cannotCreate(path: dir, reason: String(cString: strerror(errno)))
        }
    }

    static func translate(_ e: DatabaseError, path: String) -> StoreError {
        translate(code: e.resultCode.rawValue, message: e.message, path: path)
    }

    /// The store's error for SQLite's primary result `code` and message,
    /// from GRDB or from a direct call alike.
    static func translate(code: Int32, message: String?, path: String) -> StoreError {
        switch code {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return .notAVault(path: path, reason: "not a Coffer vault (SQLite reports: \(message ?? "file is not a database"))")
        case SQLITE_ERROR
        where (message ?? "").hasPrefix("no such column") || (message ?? "").hasPrefix("no such table")
            || (message ?? "").contains("malformed"):
            // A query names a table or column the file lacks: renamed or
            // dropped outside coffer.
            return .damaged("the schema differs from a Coffer vault's (\(message ?? "unknown"))")
        case SQLITE_MISMATCH, SQLITE_CONSTRAINT:
            return .damaged("a row breaks the vault schema's rules (\(message ?? "constraint"))")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .busy(path: path)
        case SQLITE_FULL:
            return .diskFull(path: path)
        case SQLITE_IOERR:
            if FileDiagnosis.diskIsFull(path) { return .diskFull(path: path) }
            return .io(path: path, reason: message ?? "disk I/O error")
        case SQLITE_READONLY:
            return .readOnly(path: path, reason: FileDiagnosis.whyReadOnly(path))
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            if let why = FileDiagnosis.whyUnreadable(path) { return .permissionDenied(path: path, reason: why) }
            if let why = FileDiagnosis.whyUnwritable(path) { return .readOnly(path: path, reason: why) }
            if FileDiagnosis.diskIsFull(path) { return .diskFull(path: path) }
            return .cannotCreate(path: path, reason: message ?? "cannot open")
        default:
            return .database(message ?? "SQLite error \(code)")
        }
    }

    /// Runs `body` in a read transaction on the direct connection (GRDB's
    /// once it took over): the read verbs' path, which never builds GRDB's
    /// queue. The same transaction as ``read(_:)``'s: deferred, reads only
    /// (`query_only`), waiting up to the busy timeout for a writer.
    public func readDirect<T>(_ body: (ReadConnection) throws -> T) throws -> T {
        lock.lock()
        guard let handle = direct else {
            lock.unlock()
            return try read { db in try body(ReadConnection(db)) }
        }
        defer { lock.unlock() }
        do {
            guard !inDirectRead else { throw StoreError.database("the vault store was used inside one of its own reads") }
            inDirectRead = true
            defer { inDirectRead = false }
            try Self.exec(handle, "BEGIN DEFERRED")
            let result: T
            do { result = try body(ReadConnection(direct: handle)) } catch {
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
                throw error
            }
            try Self.exec(handle, "COMMIT")
            return result
        } catch let e as SQLiteFailure {
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw Self.translate(code: e.code, message: e.message, path: path).naming(path)
        } catch let e as StoreError {
            throw e.naming(path)
        }
    }

    private static func exec(_ handle: OpaquePointer, _ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw SQLiteFailure(handle, rc) }
    }

    /// Runs `body` in a read transaction.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try queue().read(body) } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError {
            throw e.naming(path)
        } catch let e as SQLiteFailure { throw Self.translate(code: e.code, message: e.message, path: path).naming(path) }
    }

    /// Runs `body` in one write transaction: all of it is committed or none.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue().write(body)
        } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError { throw e.naming(path) } catch let e
            as SQLiteFailure
        { throw Self.translate(code: e.code, message: e.message, path: path).naming(path) }
    }

    /// Runs `body` inside an immediate transaction, for read-modify-write
    /// sequences that must not interleave with another process.
    public func writeImmediate<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue().inDatabase { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                guard let result else { throw StoreError.database("the transaction returned nothing") }
                return result
            }
        } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError { throw e.naming(path) } catch let e
            as SQLiteFailure
        { throw Self.translate(code: e.code, message: e.message, path: path).naming(path) }
    }
}
