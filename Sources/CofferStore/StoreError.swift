/// Failures of the storage layer, translated to ``CofferError`` by
/// CofferKit.
public enum StoreError: Error, Sendable, Equatable {
    /// No file at the path.
    case notFound(path: String)
    /// The file exists but is not a Coffer vault (or is damaged).
    case notAVault(path: String, reason: String)
    /// The vault was written by a newer Coffer.
    case newerFormat(path: String, found: Int, supported: Int)
    /// A file already exists where a new vault should be created.
    case alreadyExists(path: String)
    /// The file or its folder cannot be created (errno text).
    case cannotCreate(path: String, reason: String)
    /// Another process holds the vault locked longer than the busy timeout.
    case busy(path: String)
    /// The file or a folder on its path cannot be read or searched by this
    /// user (`reason`: what exactly).
    case permissionDenied(path: String, reason: String)
    /// The vault cannot be written: the file, its folder (where SQLite
    /// writes its journal) or the file system is read-only.
    case readOnly(path: String, reason: String)
    /// The disk holding the vault is full (SQLITE_FULL, ENOSPC).
    case diskFull(path: String)
    /// Reading or writing the file failed (SQLITE_IOERR).
    case io(path: String, reason: String)
    /// The vault file holds something coffer never writes: a missing
    /// table or column, a value of the wrong type or out of range, rows
    /// that fail the integrity checks (docs/threat-model.md). The text
    /// names what, never a value.
    case damaged(String)
    /// Any other SQLite failure, with SQLite's message (never data).
    case database(String)
}

extension StoreError {
    /// The same error naming the vault file: queries only know the
    /// connection's label.
    func naming(_ path: String) -> StoreError {
        switch self {
        case .notAVault(_, let reason): return .notAVault(path: path, reason: reason)
        case .damaged(let what) where !what.hasSuffix("(in \(path))"): return .damaged("\(what) (in \(path))")
        default: return self
        }
    }
}
