import CofferSync
import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#endif

/// The SQLite file behind a vault. Owns the connection; every query of
/// the vault goes through here.
public final class VaultStore: Sendable {
    /// The newest vault format this build reads and writes.
    public static let formatVersion = 7
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
    let queue: DatabaseQueue
    /// A descriptor holding an exclusive `flock` on a file this process is
    /// creating (-1 for an opened vault): a temporary vault being built is
    /// never swept as litter (docs/reliability.md).
    private let lockFD: Int32

    private init(path: String, queue: DatabaseQueue, lockFD: Int32 = -1) {
        self.path = path
        self.queue = queue
        self.lockFD = lockFD
    }

    deinit { if lockFD >= 0 { close(lockFD) } }

    static func configuration() -> Configuration {
        var config = Configuration()
        config.busyMode = .timeout(5)
        config.foreignKeysEnabled = true
        config.label = "coffer.vault"
        // Item payloads are ciphertexts, but keep statement arguments out
        // of any error text all the same.
        config.publicStatementArguments = false
        config.prepareDatabase { db in
            // A crash never leaves a half-applied write, and a write that
            // returned is on the disk: rollback journal (DELETE), the journal
            // and the file synced before and after the file is written, and
            // (EXTRA over FULL) the folder synced after the journal is
            // removed, without which a power cut could bring the journal back
            // and roll a committed write back. docs/reliability.md,
            // "Which syncs a write makes".
            try db.execute(sql: "PRAGMA synchronous = EXTRA")
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return config
    }

    /// Opens an existing vault. Fast path: reads `user_version` and looks
    /// for a trigger (one small `sqlite_master` query in the same read),
    /// and runs migrations only when the file is older than this build.
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
            var config = configuration()
            config.readonly = false
            let queue = try DatabaseQueue(path: path, configuration: config)
            let (version, trigger) = try queue.read { db in
                (try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0, try Queries.firstTrigger(db))
            }
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
                do { try Migrations.migrator.migrate(queue) } catch let e as DatabaseError where e.resultCode == .SQLITE_ERROR {
                    // A migration's SQL failed ("duplicate column name",
                    // "table … already exists"): the schema is not the one
                    // its format number says, so it was changed outside
                    // coffer. The migration's transaction was rolled back.
                    throw StoreError.damaged("its schema does not match vault format \(version) (\(e.message ?? "SQL error"))")
                }
            }
            removeStaleJournal(queue, path: path)
            return VaultStore(path: path, queue: queue)
        } catch let e as StoreError {
            throw e
        } catch let e as DatabaseError {
            throw translate(e, path: path).naming(path)
        } catch {
            throw .database(String(describing: error))
        }
    }

    /// A writer killed before its journal was complete leaves a journal
    /// that is not "hot": SQLite ignores it and removes it only at the
    /// next write. Removes it now (docs/reliability.md), under a RESERVED
    /// lock: no other writer can be using it, and taking the lock already
    /// rolled back a hot one. Costs one `access` when there is none;
    /// failures (a read-only vault, a live writer: never waited for) leave it
    /// for later.
    static func removeStaleJournal(_ queue: DatabaseQueue, path: String) {
        let journal = path + "-journal"
        guard access(journal, F_OK) == 0 else { return }
        try? queue.inDatabase { db in
            // Never wait: a live writer's journal is its own business.
            try db.execute(sql: "PRAGMA busy_timeout = 0")
            defer { try? db.execute(sql: "PRAGMA busy_timeout = 5000") }
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
        switch e.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return .notAVault(path: path, reason: "not a Coffer vault (SQLite reports: \(e.message ?? "file is not a database"))")
        case .SQLITE_ERROR
        where (e.message ?? "").hasPrefix("no such column") || (e.message ?? "").hasPrefix("no such table")
            || (e.message ?? "").contains("malformed"):
            // A query names a table or column the file lacks: renamed or
            // dropped outside coffer.
            return .damaged("the schema differs from a Coffer vault's (\(e.message ?? "unknown"))")
        case .SQLITE_MISMATCH, .SQLITE_CONSTRAINT:
            return .damaged("a row breaks the vault schema's rules (\(e.message ?? "constraint"))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .busy(path: path)
        case .SQLITE_FULL:
            return .diskFull(path: path)
        case .SQLITE_IOERR:
            if FileDiagnosis.diskIsFull(path) { return .diskFull(path: path) }
            return .io(path: path, reason: e.message ?? "disk I/O error")
        case .SQLITE_READONLY:
            return .readOnly(path: path, reason: FileDiagnosis.whyReadOnly(path))
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            if let why = FileDiagnosis.whyUnreadable(path) { return .permissionDenied(path: path, reason: why) }
            if let why = FileDiagnosis.whyUnwritable(path) { return .readOnly(path: path, reason: why) }
            if FileDiagnosis.diskIsFull(path) { return .diskFull(path: path) }
            return .cannotCreate(path: path, reason: e.message ?? "cannot open")
        default:
            return .database(e.message ?? "SQLite error \(e.resultCode.rawValue)")
        }
    }

    /// Runs `body` in a read transaction.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try queue.read(body) } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError {
            throw e.naming(path)
        }
    }

    /// Runs `body` in one write transaction: all of it is committed or none.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue.write(body)
        } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError { throw e.naming(path) }
    }

    /// Runs `body` inside an immediate transaction, for read-modify-write
    /// sequences that must not interleave with another process.
    public func writeImmediate<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue.inDatabase { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch let e as DatabaseError { throw Self.translate(e, path: path).naming(path) } catch let e as StoreError { throw e.naming(path) }
    }
}
