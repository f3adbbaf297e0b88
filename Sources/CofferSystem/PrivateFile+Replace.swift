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
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(String(cString: strerror(errno))) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let why = String(cString: strerror(errno))
                close(fd)
                unlink(tmp)
                throw .system(why)
            }
            written += n
        }
        // The umask may have cleared bits, never added them; make sure.
        fchmod(fd, 0o600)
        close(fd)
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
