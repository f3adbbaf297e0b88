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

    /// Appends `bytes` to `path` in one `write` (`O_APPEND`: appends of
    /// concurrent processes never interleave within one record), creating
    /// it with mode 0600 when missing. Refuses a link, a file that is not a
    /// private regular file of this user, or one that would grow past
    /// `maxSize`. No fsync: for caches that may be lost.
    public static func append(path: String, bytes: [UInt8], maxSize: Int) throws(Failure) {
        guard !bytes.isEmpty else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { throw .notPrivate }
            throw .system(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == geteuid(), st.st_mode & 0o077 == 0,
            st.st_size <= maxSize - bytes.count
        else { throw .notPrivate }
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        guard n == bytes.count else { throw .system(n < 0 ? String(cString: strerror(errno)) : "short write") }
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
