#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A regular file mapped read-only into memory (`mmap`), for reading
/// large sorted files by binary search without loading them: only the
/// pages touched are read from disk. The mapping ends when the value is
/// released.
///
/// A file truncated by another process while mapped would make a read of
/// the lost pages raise SIGBUS; callers map files the user handed them
/// for reading (an HIBP download), which nothing rewrites in place.
public final class MappedFile: @unchecked Sendable {
    /// Why a file could not be mapped; `errno` as the system reported it.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The file does not exist (ENOENT/ENOTDIR).
        case notFound(path: String)
        /// The file exists but cannot be opened or read (permissions, …).
        case unreadable(path: String, errno: Int32)
        /// Not a regular file (a directory, a device, a FIFO).
        case notRegularFile(path: String)

        public var description: String {
            switch self {
            case .notFound(let path): return "\(path) does not exist"
            case .unreadable(let path, let e): return "cannot read \(path): \(String(cString: strerror(e)))"
            case .notRegularFile(let path): return "\(path) is not a regular file"
            }
        }
    }

    public let path: String
    /// The mapped bytes (empty for an empty file).
    public let bytes: UnsafeRawBufferPointer
    private let base: UnsafeMutableRawPointer?

    /// Maps `path` read-only. `randomAccess` advises the kernel that reads
    /// jump around (no read-ahead), as a binary search does.
    public init(path: String, randomAccess: Bool = true) throws(Failure) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw .notFound(path: path) }
            throw .unreadable(path: path, errno: e)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .unreadable(path: path, errno: errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .notRegularFile(path: path) }
        let size = Int(st.st_size)
        if size == 0 {
            base = nil
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else {
            throw .unreadable(path: path, errno: errno)
        }
        if randomAccess { _ = madvise(p, size, MADV_RANDOM) }
        base = p
        bytes = UnsafeRawBufferPointer(start: p, count: size)
    }

    deinit {
        if let base { munmap(base, bytes.count) }
    }
}
