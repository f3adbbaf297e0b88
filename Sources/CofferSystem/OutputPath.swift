import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where a file argument that coffer writes really goes (issue 15,
/// docs/user-guide.md "Output files"):
///
/// - `-`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N`
///   name a descriptor this process already has: written there directly
///   (like the shell does), never opened by name and never renamed over;
/// - a character device or a FIFO (after following links) is opened and
///   written as a stream;
/// - anything else is a regular file, written atomically (temporary file,
///   fsync, rename) in the folder of the file a symbolic link points to,
///   so the link itself stays.
public enum OutputDestination: Equatable, Sendable {
    /// An already open descriptor (standard output for `-`).
    case descriptor(Int32)
    /// A character device or FIFO: open `path` and write in order.
    case stream(path: String)
    /// A regular file (existing or to create) at this resolved path.
    case file(resolvedPath: String)

    /// What `path` names. Refuses folders, sockets and other files that
    /// cannot hold the output (``FileWriteFailure``, exit 73).
    public static func of(_ path: String) throws(FileWriteFailure) -> OutputDestination {
        if let fd = descriptorAlias(path) {
            guard fcntl(fd, F_GETFD) >= 0 else {
                throw FileWriteFailure(
                    path: path, message: "cannot write \(displayName(path)): file descriptor \(fd) is not open",
                    hint: "open it in the shell, or write to a file")
            }
            return .descriptor(fd)
        }
        var st = stat()
        if stat(path, &st) == 0 {
            switch st.st_mode & S_IFMT {
            case S_IFCHR, S_IFIFO:
                // Opened by its resolved path: the links on the way are
                // checked as for a file (docs/user-guide.md, "Output files").
                return .stream(path: try AtomicFile.resolve(path, allowingStreams: true))
            case S_IFREG:
                break
            case S_IFDIR:
                throw FileWriteFailure(path: path, message: "\(path) is a folder", hint: "give the path of a file to write in it")
            default:
                throw FileWriteFailure(
                    path: path, message: "\(path) exists and is not a regular file, a device or a FIFO",
                    hint: "choose the path of a file to write, or remove what is there")
            }
        }
        return .file(resolvedPath: try AtomicFile.resolve(path))
    }

    /// The descriptor `path` stands for, if it is one of the names of an
    /// open descriptor of this process.
    public static func descriptorAlias(_ path: String) -> Int32? {
        switch path {
        case "-", "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default: break
        }
        for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
            let rest = path.dropFirst(prefix.count)
            guard !rest.isEmpty, rest.count <= 9, rest.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int32(rest) else { return nil }
            return n
        }
        return nil
    }

    /// How to name `path` in messages (`-` is "standard output").
    public static func displayName(_ path: String) -> String {
        path == "-" ? "standard output" : path
    }
}

/// Writes to a descriptor or a stream path (see ``OutputDestination``): no
/// temporary file, no rename. A write that fails keeps its `errno`.
public final class StreamWriter {
    public let path: String
    public let fd: Int32
    private let ownsDescriptor: Bool

    private init(path: String, fd: Int32, ownsDescriptor: Bool) {
        self.path = path
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
    }

    /// A writer for a `.descriptor` or `.stream` destination (a stream is
    /// opened now: on a FIFO that waits for a reader, as any writer does);
    /// nil for a regular file, which is written atomically instead.
    public static func open(path: String, destination: OutputDestination) throws(FileWriteFailure) -> StreamWriter? {
        switch destination {
        case .descriptor(let fd):
            return StreamWriter(path: path, fd: fd, ownsDescriptor: false)
        case .stream(let p):
            let fd = Glibc.open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard fd >= 0 else {
                let code = errno
                throw FileWriteFailure(path: path, message: "cannot open \(path): \(String(cString: strerror(code)))", errno: code)
            }
            return StreamWriter(path: path, fd: fd, ownsDescriptor: true)
        case .file:
            return nil
        }
    }

    deinit { if ownsDescriptor { close(fd) } }

    /// Writes all of `bytes`.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(FileWriteFailure) {
        var done = 0
        while done < bytes.count {
            guard let base = bytes.baseAddress else { return }
            let n = Glibc.write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                throw FileWriteFailure.writing(path: path, errno: code)
            }
            done += n
        }
    }

    public func write(_ bytes: [UInt8]) throws(FileWriteFailure) {
        let result: Result<Void, FileWriteFailure> = bytes.withUnsafeBytes { buf in
            do throws(FileWriteFailure) { try write(buf) } catch { return .failure(error) }
            return .success(())
        }
        try result.get()
    }
}

extension FileWriteFailure {
    /// A failed write of `path` with `errno` `code`.
    public static func writing(path: String, errno code: Int32) -> FileWriteFailure {
        FileWriteFailure(
            path: path, message: "cannot write \(OutputDestination.displayName(path)): \(String(cString: strerror(code)))",
            errno: code)
    }
}
