import CofferCrypto
import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bundle file opened for reading, read in bounded pieces.
final class BundleFileInput: BundleInput {
    let path: String
    private let fd: Int32

    /// Opens `path`; a missing path is ``CofferError/Kind/fileNotFound``.
    /// `-` is standard input (read once, as a stream). Anything else must
    /// be a regular file: it is opened with `O_NONBLOCK` and its type
    /// checked on the open descriptor, so a FIFO put in its place (in a
    /// sync folder, say) can never block the open.
    init(path: String) throws(CofferError) {
        self.path = path
        if path == "-" {
            let fd = dup(0)
            guard fd >= 0 else {
                throw CofferError(
                    .fileNotFound, "cannot read standard input: \(String(cString: strerror(errno)))",
                    hint: "give the path of a bundle, or redirect standard input from one")
            }
            self.fd = fd
            return
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw CofferError(.fileNotFound, "no such file: \(path)", hint: "check the path of the bundle")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw CofferError(
                .fileNotFound, "\(path) is not a regular file",
                remedy: .init(.giveBundleOrStandardInput, "give the path of a bundle file (or `-` for standard input)"))
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            if code == EACCES || code == EPERM {
                throw CofferError(.permissionDenied, "cannot read \(path): permission denied", hint: "check the file's owner and mode (ls -l)")
            }
            throw CofferError(.fileNotFound, "cannot read \(path): \(String(cString: strerror(code)))", hint: "check the file's permissions")
        }
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw CofferError(.fileNotFound, "\(path) is not a regular file", remedy: .init(.giveBundle, "give the path of a bundle file"))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        self.fd = fd
    }

    deinit { close(fd) }

    func readBytes(_ count: Int) throws(BundleError) -> [UInt8] {
        do { return try Bytes.read(fd: fd, count: count) } catch { throw .io(error.description) }
    }
}

/// Writes a bundle or summary file. A regular file (or a symbolic link to
/// one) is written atomically: a temporary file (0600, `flock`ed while it
/// is written) beside the file the path resolves to, fsync, rename over
/// it, fsync of the folder; until ``commit()`` the target is untouched and
/// ``discard()`` removes the temporary file. `-`, `/dev/stdout`, character
/// devices and FIFOs are written as streams (``OutputDestination``).
///
/// A failed write keeps its `errno`, so that a full disk is reported as
/// one (exit 74) with the disk's name.
final class AtomicFileOutput: BundleOutput {
    /// The path as the user gave it.
    let path: String
    /// The temporary file, nil when writing a stream.
    let tempPath: String?
    /// The file renamed over on commit.
    private let target: String
    private var fd: Int32
    private let stream: StreamWriter?
    private var pending: [UInt8] = []
    /// The first write that failed.
    private(set) var failure: FileWriteFailure?

    init(path: String) throws(CofferError) {
        self.path = path
        let destination: OutputDestination
        do { destination = try OutputDestination.of(path) } catch { throw CofferError(error) }
        do { stream = try StreamWriter.open(path: path, destination: destination) } catch { throw CofferError(error) }
        if let stream {
            tempPath = nil
            target = path
            fd = stream.fd
        } else {
            guard case .file(let resolved) = destination else { throw CofferError(.internalError, "unexpected output \(path)") }
            target = resolved
            let dir = (resolved as NSString).deletingLastPathComponent
            let base = (resolved as NSString).lastPathComponent
            // What a killed export of the same file left (issue 13).
            AtomicFileOutput.sweepStale(dir: dir) { $0 == base }
            let temp = (dir.isEmpty ? "" : dir + "/") + AtomicFileOutput.tempName(for: base)
            tempPath = temp
            fd = Glibc.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let code = errno
                throw CofferError(
                    FileWriteFailure(
                        path: path, message: "cannot create \(path): \(String(cString: strerror(code)))",
                        hint: "check that the folder \(dir.isEmpty ? "." : dir) exists and is writable", errno: code))
            }
            TempFiles.lock(fd: fd)
        }
        pending.reserveCapacity(1 << 17)
    }

    /// `.<base>.tmp-<12 hex>`: the temporary name of a file named `base`.
    static func tempName(for base: String) -> String { ".\(base).tmp-\(Hex.encode(Random.bytesForName()))" }

    /// Whether `name` is a temporary name ``tempName(for:)`` makes, for a
    /// base name that `base` accepts.
    static func isTempName(_ name: String, base: (Substring) -> Bool) -> Bool {
        guard name.hasPrefix("."), let r = name.range(of: ".tmp-", options: .backwards) else { return false }
        let stem = name[name.index(after: name.startIndex)..<r.lowerBound]
        return !stem.isEmpty && base(stem) && TempFiles.isRandomSuffix(name[r.upperBound...])
    }

    /// Removes unlocked temporary files older than
    /// ``TempFiles/staleAge`` in `dir` whose base name `base` accepts.
    /// `names` is a listing of `dir` already made, if any.
    @discardableResult
    static func sweepStale(dir: String, names: [String]? = nil, base: @escaping (Substring) -> Bool) -> [String] {
        TempFiles.sweep(dir: dir, names: names, isOurs: { isTempName($0, base: base) })
    }

    deinit {
        if fd >= 0, let tempPath {
            close(fd)
            unlink(tempPath)
        }
    }

    func writeBytes(_ bytes: [UInt8]) throws(BundleError) {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 16 { try flush() }
    }

    private func flush() throws(BundleError) {
        guard !pending.isEmpty else { return }
        do { try Bytes.write(fd: fd, pending) } catch {
            failure = failure ?? .writing(path: path, errno: error.code)
            throw .io(error.description)
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// The error for a failed write: the saved `errno` when there is one
    /// (a full disk is exit 74), else `fallback`.
    func error(_ fallback: @autoclosure () -> String) -> CofferError {
        if let failure { return CofferError(failure) }
        return CofferError(.cannotCreate, "cannot write \(OutputDestination.displayName(path)): \(fallback())")
    }

    /// Flushes, syncs and renames over the target.
    func commit() throws(CofferError) {
        do { try flush() } catch {
            discard()
            throw self.error("\(error)")
        }
        guard let tempPath else { return } // a stream: written in order, nothing to rename
        guard fsync(fd) == 0 else {
            failure = failure ?? .writing(path: path, errno: errno)
            discard()
            throw self.error("fsync failed")
        }
        close(fd)
        fd = -1
        guard rename(tempPath, target) == 0 else {
            failure = failure ?? .writing(path: path, errno: errno)
            unlink(tempPath)
            throw self.error("rename failed")
        }
        let dir = (target as NSString).deletingLastPathComponent
        let dfd = Glibc.open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    func discard() {
        if fd >= 0, let tempPath {
            close(fd)
            fd = -1
            unlink(tempPath)
        }
    }
}

extension Random {
    /// 6 random bytes for temporary file names.
    static func bytesForName() -> [UInt8] { Random.bytes(6) }
}
