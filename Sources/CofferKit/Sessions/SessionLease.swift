import CofferCrypto
import CofferSync
import Foundation

/// The shell session a ``Coffer`` was opened with, watched for its end:
/// ended by a lock (its file wiped), expired (idle timeout or maximum
/// lifetime, the same rules as ``Session/unlock(file:token:directory:refresh:now:)``),
/// or removed. The token's secret is not kept: the master key was taken
/// from the session once, and what is left to check needs only the file.
struct SessionLease: Sendable {
    let directory: SessionDirectory
    /// The session id (the file name without `.session`).
    let id: [UInt8]

    var fileName: String { Hex.encode(id) + Session.suffix }

    /// Why the session is over, or nil while it lasts. A use (`refresh`)
    /// restarts the idle timer as a `coffer` command using the session
    /// does; a look that is not a use (the change stream) does not. An
    /// expired session's file is wiped, as every session user does.
    func end(refresh: Bool, now: Date = Date()) -> String? {
        let stored: (bytes: [UInt8], modifiedMs: Int64)?
        do { stored = try directory.read(name: fileName) } catch {
            return "session ended (its file can no longer be used)"
        }
        guard let stored else { return "session ended (locked, expired or removed)" }
        var reader = ByteReader(stored.bytes)
        guard let header = try? SessionHeader(reading: &reader), header.id == id else {
            return "session ended (its file was replaced or damaged)"
        }
        if let why = header.expiry(lastUsed: stored.modifiedMs, now: Session.millis(now)) {
            directory.remove(name: fileName)
            return why
        }
        if refresh { directory.touch(name: fileName) }
        return nil
    }
}

extension Session {
    /// ``unlock(file:token:directory:refresh:now:)``, also returning the
    /// session to watch for its end (``Coffer`` locks itself when it ends).
    static func unlockLeased(
        file: VaultFile, token: String, directory: SessionDirectory, now: Date = Date()
    ) throws(CofferError) -> (vault: Vault, lease: SessionLease) {
        let (master, id) = try masterKeyAndID(file: file, token: token, directory: directory, refresh: true, now: now)
        let vault = try file.unlock(masterKey: master, listingCache: ListingCache(path: directory.path + "/" + Hex.encode(id) + ListingCache.suffix))
        return (vault, SessionLease(directory: directory, id: id))
    }
}
