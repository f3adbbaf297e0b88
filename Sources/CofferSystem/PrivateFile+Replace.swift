import CofferCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PrivateFile {
    /// Replaces `path` with a new private file (mode 0600) holding
    /// `bytes`: written to a fresh `O_EXCL` file beside it, then renamed
    /// over it, so a reader sees the old file or the new one, never a part.
    /// Whatever was at `path` (a link, a file of another mode) is replaced,
    /// not written through. No fsync: for caches that may be lost.
    public static func replace(path: String, bytes: [UInt8]) throws(Failure) {
        let random = Random.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let tmp = String(path[..<slash]) + "." + String(path[slash...]) + "." + String(random, radix: 16) + ".tmp"
        try writeNew(path: tmp, bytes: bytes, sync: false)
        guard rename(tmp, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tmp)
            throw .system(why)
        }
    }

    /// Removes `path` if it is a regular file or a link (not following
    /// it); false when nothing was removed.
    @discardableResult
    public static func removeIfPresent(path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG || (st.st_mode & S_IFMT) == S_IFLNK else { return false }
        return unlink(path) == 0
    }
}
