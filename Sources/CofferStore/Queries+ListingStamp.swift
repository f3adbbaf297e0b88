import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(GRDBSQLite)
internal import GRDBSQLite
#else
internal import SQLite3
#endif

/// What identifies one state of a vault file for the listing cache
/// (docs/key-hierarchy.md, "Listing cache"): the stored vault MAC, which
/// every coffer write changes, and SQLite's file change counter (bytes
/// 24–27 of the database header), which every committed write
/// transaction of any SQLite program changes — so an edit made with
/// `sqlite3` that leaves the MAC as it was still changes the stamp.
public struct ListingStamp: Sendable, Equatable {
    public var mac: [UInt8]
    public var changeCounter: UInt32

    public init(mac: [UInt8], changeCounter: UInt32) {
        self.mac = mac
        self.changeCounter = changeCounter
    }
}

extension Queries {
    /// The stamp of the vault as this read transaction sees it; nil when
    /// the vault has no MAC yet, or is in WAL mode (where the header's
    /// change counter does not move with each write), so no cache applies.
    /// Call it inside a transaction: the shared lock it holds keeps any
    /// writer from committing between the two reads.
    public static func listingStamp(_ db: Database) throws -> ListingStamp? { try listingStamp(ReadConnection(db)) }

    public static func listingStamp(_ db: ReadConnection) throws -> ListingStamp? {
        let mac = try db.fetchOne("SELECT mac FROM vaultIntegrity WHERE singleton = 1") { row in try row.bytes(at: 0, name: "vaultIntegrity.mac") }
        guard let mac, mac.count == VaultMAC.length else { return nil }
        guard let counter = fileChangeCounter(db.handle) else { return nil }
        return ListingStamp(mac: mac, changeCounter: counter)
    }
}

extension Queries {
    /// SQLite's file change counter (bytes 24–27 of the database header) as
    /// it is in the file, not in SQLite's page cache, read through SQLite's
    /// own file handle: opening and closing a second descriptor on the file
    /// would drop SQLite's POSIX locks. Nil when the header cannot be read
    /// or says WAL mode (where the counter does not move with each write).
    static func fileChangeCounter(_ handle: OpaquePointer) -> UInt32? {
        var filePointer: UnsafeMutableRawPointer?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &filePointer) == SQLITE_OK,
            let file = filePointer?.assumingMemoryBound(to: sqlite3_file.self),
            let methods = file.pointee.pMethods, let read = methods.pointee.xRead
        else { return nil }
        var header = [UInt8](repeating: 0, count: 100)
        let rc = header.withUnsafeMutableBytes { read(file, $0.baseAddress, 100, 0) }
        guard rc == SQLITE_OK else { return nil }
        // Bytes 18 and 19: file format write/read versions, 1 = rollback
        // journal, 2 = WAL.
        guard header[18] == 1, header[19] == 1 else { return nil }
        return UInt32(header[24]) << 24 | UInt32(header[25]) << 16 | UInt32(header[26]) << 8 | UInt32(header[27])
    }

    /// The state of the vault file as this transaction sees it, for the
    /// integrity stamp (docs/key-hierarchy.md, "Integrity stamp"): the
    /// file's identity and status-change time, its size, SQLite's change
    /// counter and the stored vault MAC. Nil when any of them cannot be
    /// read (no stamp is then trusted or made). Call it inside a
    /// transaction: the lock it holds keeps any other SQLite writer from
    /// committing meanwhile.
    public static func fileState(_ db: Database, path: String) throws -> FileState? {
        let connection = try ReadConnection(db)
        guard let mac = try storedMAC(connection), let counter = fileChangeCounter(connection.handle) else { return nil }
        return FileState(path: path, changeCounter: counter, mac: mac)
    }
}

/// One state of a vault file as the integrity stamp records it
/// (docs/key-hierarchy.md, "Integrity stamp"). The status-change time
/// (`st_ctime`) moves with every change to the file's bytes or metadata
/// and cannot be set back by an unprivileged process (not even with
/// `touch`, which sets only the access and modification times), so an
/// edit made with any program after the state was recorded — `sqlite3`,
/// a hex editor that leaves SQLite's change counter as it was, a copy of
/// another file put in its place — gives another state.
public struct FileState: Sendable, Equatable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var changedSeconds: Int64
    public var changedNanoseconds: Int64
    public var changeCounter: UInt32
    public var mac: [UInt8]

    public init(device: UInt64, inode: UInt64, size: Int64, changedSeconds: Int64, changedNanoseconds: Int64, changeCounter: UInt32, mac: [UInt8]) {
        self.device = device
        self.inode = inode
        self.size = size
        self.changedSeconds = changedSeconds
        self.changedNanoseconds = changedNanoseconds
        self.changeCounter = changeCounter
        self.mac = mac
    }

    /// `stat(2)` of `path` with the given counter and MAC; nil when the
    /// file cannot be examined.
    init?(path: String, changeCounter: UInt32, mac: [UInt8]) {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        self.init(
            device: UInt64(truncatingIfNeeded: st.st_dev), inode: UInt64(truncatingIfNeeded: st.st_ino), size: Int64(st.st_size),
            changedSeconds: Int64(st.st_ctim.tv_sec), changedNanoseconds: Int64(st.st_ctim.tv_nsec), changeCounter: changeCounter, mac: mac)
    }
}

extension VaultStore {
    /// The state of the file right after a commit of this store whose
    /// transaction started at change counter `expectedCounter - 1` and
    /// stored `mac`; nil unless the file is exactly that commit's result:
    /// the counter one higher (another process's commit since would have
    /// moved it further: SQLite writes page 1 first) and the file's status
    /// the same before and after the counter is read.
    public func fileStateAfterCommit(expectedCounter: UInt32, mac: [UInt8]) -> FileState? {
        guard let queue = try? queue() else { return nil }
        return queue.inDatabase { db -> FileState? in
            guard let handle = db.sqliteConnection, sqlite3_get_autocommit(handle) != 0 else { return nil }
            guard let first = FileState(path: path, changeCounter: expectedCounter, mac: mac),
                Queries.fileChangeCounter(handle) == expectedCounter,
                let second = FileState(path: path, changeCounter: expectedCounter, mac: mac), first == second
            else { return nil }
            return first
        }
    }
}
