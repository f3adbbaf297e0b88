import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A new vault file (`init`, `clone`) is built under a temporary name in
/// its final folder and linked into place only when complete, so a process
/// killed part-way never leaves a half-made file at the vault's path
/// (issue 13, docs/reliability.md). The temporary file is `flock`ed while
/// it is built; one left by a killed process is swept by the next `init`
/// or `clone` of the same path once it is older than
/// ``TempFiles/staleAge``.
enum NewVaultFile {
    static let suffixes = ["", "-journal", "-wal", "-shm"]

    /// `.<base>.<kind>-<12 hex>` beside `vaultPath`.
    static func tempPath(for vaultPath: String, kind: String) -> String {
        let dir = (vaultPath as NSString).deletingLastPathComponent
        let base = (vaultPath as NSString).lastPathComponent
        return (dir.isEmpty ? "" : dir + "/") + ".\(base).\(kind)-\(Hex.encode(Random.bytes(6)))"
    }

    /// The temporary name `name` would be for a vault named `base`, minus
    /// any SQLite journal suffix; nil when it is not one of ours.
    static func ownTemp(_ name: String, base: String) -> String? {
        let prefix = ".\(base)."
        guard name.hasPrefix(prefix) else { return nil }
        var rest = name.dropFirst(prefix.count)
        var main = name
        for s in suffixes where !s.isEmpty && rest.hasSuffix(s) {
            rest = rest.dropLast(s.count)
            main = String(name.dropLast(s.count))
        }
        for kind in ["init-", "clone-"] where rest.hasPrefix(kind) {
            if TempFiles.isRandomSuffix(rest.dropFirst(kind.count)) { return main }
        }
        return nil
    }

    /// Removes what killed `init`s and `clone`s of `vaultPath` left.
    @discardableResult
    static func sweepStale(for vaultPath: String) -> [String] {
        let dir = (vaultPath as NSString).deletingLastPathComponent
        let base = (vaultPath as NSString).lastPathComponent
        return TempFiles.sweep(
            dir: dir, isOurs: { ownTemp($0, base: base) != nil },
            lockedBy: { name in ownTemp(name, base: base).flatMap { $0 == name ? nil : $0 } })
    }

    /// Builds a vault at a temporary name with `body` (which must release
    /// every connection to it before returning), then links it to
    /// `vaultPath`, never replacing a file that appeared meanwhile. On any
    /// failure nothing is left at either name.
    static func build<T>(at vaultPath: String, kind: String, _ body: (String) throws(CofferError) -> T) throws(CofferError) -> T {
        let dir = (vaultPath as NSString).deletingLastPathComponent
        do { try VaultStore.makeDirectory(dir.isEmpty ? "." : dir) } catch { throw CofferError.from(error) }
        sweepStale(for: vaultPath)
        let temp = tempPath(for: vaultPath, kind: kind)
        func removeTemp() { for s in suffixes { unlink(temp + s) } }
        let result: T
        var lockFD: Int32 = -1
        defer { if lockFD >= 0 { close(lockFD) } }
        do {
            result = try body(temp)
        } catch {
            removeTemp()
            throw error
        }
        // Hold the lock from here on (the body created the file); a sweep
        // by another process skips it even if this takes long.
        lockFD = Glibc.open(temp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if lockFD >= 0 { TempFiles.lock(fd: lockFD) }
        guard link(temp, vaultPath) == 0 else {
            let code = errno
            removeTemp()
            if code == EEXIST {
                throw CofferError(
                    .vaultExists, "a file already exists at \(vaultPath)",
                    remedy: .init(.chooseAnotherVaultPath, "choose another path for the vault", path: vaultPath))
            }
            throw CofferError(FileWriteFailure(path: vaultPath, message: "cannot create \(vaultPath): \(String(cString: strerror(code)))", errno: code))
        }
        removeTemp()
        let dfd = Glibc.open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
        return result
    }
}
