#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Small files private to the user (shell session files): created with
/// `O_EXCL` and mode 0600, read only when they are regular files (not
/// links) owned by this user with no group or other access, wiped before
/// removal. Keeps the pointer work out of CofferKit.
public enum PrivateFile {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// open/write failed (errno text).
        case system(String)
        /// Not a regular private file of this user, or too large.
        case notPrivate

        public var description: String {
            switch self {
            case .system(let why): return why
            case .notPrivate: return "not a private regular file of this user"
            }
        }
    }

    /// Creates `path` with `bytes` (mode 0600). Never replaces a file.
    public static func create(path: String, bytes: [UInt8]) throws(Failure) {
        try writeNew(path: path, bytes: bytes, sync: true)
    }

    /// Writes `bytes` to a new file at `path` (`O_EXCL`, never through a
    /// link, mode 0600 whatever the umask), fsync'd when `sync`; on a
    /// failed write the partial file is removed.
    static func writeNew(path: String, bytes: [UInt8], sync: Bool) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(String(cString: strerror(errno))) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let why = String(cString: strerror(errno))
                close(fd)
                unlink(path)
                throw .system(why)
            }
            written += n
        }
        // The umask may have cleared bits, never added them; make sure.
        fchmod(fd, 0o600)
        if sync { fsync(fd) }
        close(fd)
    }

    /// The bytes and modification time (ms since 1970) of `path`; nil when
    /// it does not exist.
    public static func read(path: String, maxSize: Int) throws(Failure) -> (bytes: [UInt8], modifiedMillis: Int64)? {
        // O_NONBLOCK: a FIFO (or device) put where a session file should
        // be must not hang the open; the type check below refuses it.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw .notPrivate }
            throw .system(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == geteuid(), st.st_mode & 0o077 == 0,
            st.st_size <= maxSize
        else { throw .notPrivate }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var total = 0
        while total < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, $0.count - total) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            total += n
        }
        let ms = Int64(st.st_mtim.tv_sec) * 1000 + Int64(st.st_mtim.tv_nsec) / 1_000_000
        return (Array(bytes.prefix(total)), ms)
    }

    /// Sets the modification time to now (not following links).
    public static func touch(path: String) {
        _ = utimensat(AT_FDCWD, path, nil, AT_SYMLINK_NOFOLLOW)
    }

    /// Overwrites a regular file with zeros, syncs it, and removes it.
    /// Returns whether a file was removed.
    @discardableResult
    public static func wipeAndRemove(path: String, maxSize: Int) -> Bool {
        // Only regular files: a FIFO, device or folder in their place is
        // not ours to open (a FIFO would block) or remove.
        var lst = stat()
        guard lstat(path, &lst) == 0, (lst.st_mode & S_IFMT) == S_IFREG else { return false }
        let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        if fd >= 0 {
            var st = stat()
            if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0, st.st_size <= maxSize {
                let zeros = [UInt8](repeating: 0, count: Int(st.st_size))
                _ = zeros.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                fsync(fd)
            }
            close(fd)
        }
        return unlink(path) == 0
    }

    /// Whether `path` exists and is something other than a regular file
    /// (a FIFO, device, socket, folder or link); false when it is missing.
    public static func isIrregular(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG
    }

    /// Whether `path` is a directory (not a link) owned by this user with
    /// no group or other access; nil when it does not exist.
    public static func isPrivateDirectory(_ path: String) -> Bool? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (st.st_mode & S_IFMT) == S_IFDIR && st.st_uid == geteuid() && st.st_mode & 0o077 == 0
    }

    /// Creates a directory with mode 0700 (no error if it exists).
    public static func makeDirectory(_ path: String) throws(Failure) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw .system(String(cString: strerror(errno))) }
    }

    /// Whether `path` is an existing directory (following links).
    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The effective user id.
    public static var userID: UInt32 { geteuid() }
}
