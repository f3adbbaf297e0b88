import GRDB

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
        let handle = db.handle
        // The header as it is in the file (not SQLite's page cache), read
        // through SQLite's own file handle: opening and closing a second
        // descriptor on the file would drop SQLite's POSIX locks.
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
        let counter = UInt32(header[24]) << 24 | UInt32(header[25]) << 16 | UInt32(header[26]) << 8 | UInt32(header[27])
        return ListingStamp(mac: mac, changeCounter: counter)
    }
}
