import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a file could not be written: the path as the user gave it, what
/// failed, the `errno` value (0 when none applies) and a hint. CofferKit
/// turns it into a ``CofferError`` (a full disk becomes exit 74).
public struct FileWriteFailure: Error, Sendable, Equatable {
    public let path: String
    public let message: String
    public let hint: String?
    public let errno: Int32

    public init(path: String, message: String, hint: String? = nil, errno: Int32 = 0) {
        self.path = path
        self.message = message
        self.hint = hint
        self.errno = errno
    }
}

/// Writes files that may hold secrets: mode 0600, all or nothing.
public enum AtomicFile {
    /// Writes `data` to `path` atomically: a new 0600 temporary file in the
    /// same folder, fsync, then rename over `path`. On any failure the
    /// temporary file is removed and `path` is untouched.
    ///
    /// A symbolic link at `path` is written through, not replaced: the
    /// file it points to (which need not exist yet) is the one renamed
    /// over, in its own folder. `-`, `/dev/stdout` and the other names of
    /// an open descriptor, character devices and FIFOs are written as
    /// streams (``OutputDestination``). A folder or a socket is refused
    /// with ``CofferError/Kind/cannotCreate`` (exit 73).
    public static func writeAtomically(_ data: Data, to path: String) throws(FileWriteFailure) {
        let destination = try OutputDestination.of(path)
        if let stream = try StreamWriter.open(path: path, destination: destination) {
            try stream.write(Array(data))
            return
        }
        guard case .file(let target) = destination else { return }
        let url = URL(fileURLWithPath: target)
        let dir = url.deletingLastPathComponent().path
        let tmp = dir + "/." + url.lastPathComponent + ".coffer-" + UUID().uuidString.prefix(8) + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw FileWriteFailure(
                path: path, message: "cannot create \(path): \(String(cString: strerror(code)))", hint: "check that the folder \(dir) exists and is writable",
                errno: code)
        }
        TempFiles.lock(fd: fd)
        // The umask may have cleared bits, never added them; make sure.
        fchmod(fd, 0o600)
        var failure: FileWriteFailure?
        do {
            try StreamWriter.open(path: path, destination: .descriptor(fd))?.write(Array(data))
            if fsync(fd) != 0 { failure = .writing(path: path, errno: errno) }
        } catch {
            failure = error
        }
        close(fd)
        if let failure {
            unlink(tmp)
            throw failure
        }
        guard rename(tmp, target) == 0 else {
            let code = errno
            unlink(tmp)
            throw FileWriteFailure(path: path, message: "cannot replace \(path): \(String(cString: strerror(code)))", errno: code)
        }
        // Make the rename itself durable.
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// The file `path` names once every symbolic link is followed, walked
    /// component by component as the kernel does: every link met on the
    /// way — a folder's as well as the last one's — must pass the
    /// protected-symlink rule (``ProtectedSymlinks``) in the folder that
    /// holds it, or the write is refused (exit 73). A dangling last link
    /// names the file to create. The result has no link left in its folder
    /// part, so the temporary file and the rename stay where was checked.
    /// With `allowingStreams`, the last component may also be a character
    /// device or a FIFO (``OutputDestination/stream(path:)``).
    static func resolve(_ path: String, allowingStreams: Bool = false) throws(FileWriteFailure) -> String {
        var absolute = path
        if !absolute.hasPrefix("/") {
            guard let cwd = getcwd(nil, 0) else { return URL(fileURLWithPath: path).path }
            defer { free(cwd) }
            absolute = String(cString: cwd) + "/" + path
        }
        // Components still to walk, first at the end (popLast is O(1)).
        var pending = Array(absolute.split(separator: "/", omittingEmptySubsequences: true).map(String.init).reversed())
        var resolved = "" // a folder with no link in it; "" is the root
        var hops = 0
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                if let slash = resolved.lastIndex(of: "/") { resolved = String(resolved[..<slash]) }
                continue
            }
            let candidate = resolved + "/" + component
            let isLast = pending.isEmpty
            var st = stat()
            guard lstat(candidate, &st) == 0 else {
                // Missing: the file to create, or a missing folder that the
                // open reports with its own error.
                return ([candidate] + pending.reversed()).joined(separator: "/")
            }
            let kind = st.st_mode & S_IFMT
            if kind == S_IFLNK {
                if let why = ProtectedSymlinks.refusal(link: candidate) {
                    throw FileWriteFailure(
                        path: path, message: "refusing to write through \(why)",
                        hint: "someone else may have planted the link; remove it or choose another path", errno: EACCES)
                }
                hops += 1
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let n = readlink(candidate, &buffer, buffer.count - 1)
                guard hops <= 40, n > 0 else {
                    throw FileWriteFailure(
                        path: path,
                        message: "cannot follow the symbolic link \(candidate): \(hops > 40 ? "too many levels of links" : String(cString: strerror(errno)))",
                        hint: "fix the link or choose another path")
                }
                let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if target.hasPrefix("/") { resolved = "" }
                pending.append(contentsOf: target.split(separator: "/", omittingEmptySubsequences: true).map(String.init).reversed())
                continue
            }
            if isLast {
                guard kind == S_IFREG || (allowingStreams && (kind == S_IFCHR || kind == S_IFIFO)) else {
                    throw FileWriteFailure(
                        path: path, message: "\(path) exists and is not a regular file", hint: "choose the path of a file to write, or remove what is there")
                }
                return candidate
            }
            guard kind == S_IFDIR else {
                // A file where a folder should be: the open reports it.
                return ([candidate] + pending.reversed()).joined(separator: "/")
            }
            resolved = candidate
        }
        // The path named a folder (`/`, `.`, `x/..`): the open refuses it.
        return resolved.isEmpty ? "/" : resolved
    }
}
