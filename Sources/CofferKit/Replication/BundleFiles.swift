import CofferCrypto
import CofferSystem
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bundle file opened for reading, read in bounded pieces.
final class BundleFileInput: BundleInput {
    let path: String
    private let fd: Int32

    /// Opens `path`; a missing path is ``CofferError/Kind/fileNotFound``.
    init(path: String) throws(CofferError) {
        self.path = path
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw CofferError(.fileNotFound, "no such file: \(path)", hint: "check the path of the bundle")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw CofferError(.fileNotFound, "\(path) is not a regular file", hint: "give the path of a bundle written by `coffer export`")
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CofferError(.fileNotFound, "cannot read \(path): \(String(cString: strerror(errno)))", hint: "check the file's permissions")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    func readBytes(_ count: Int) throws(BundleError) -> [UInt8] {
        do { return try Bytes.read(fd: fd, count: count) } catch { throw .io(error.description) }
    }
}

/// Writes a file atomically: a temporary file (0600) beside the target,
/// fsync, rename over the target, fsync of the folder. Until
/// ``commit()``, the target is untouched; ``discard()`` removes the
/// temporary file.
final class AtomicFileOutput: BundleOutput {
    let path: String
    let tempPath: String
    private var fd: Int32
    private var pending: [UInt8] = []

    init(path: String) throws(CofferError) {
        self.path = path
        let dir = (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent
        tempPath = (dir.isEmpty ? "" : dir + "/") + ".\(base).tmp-\(Hex.encode(Random.bytesForName()))"
        fd = Glibc.open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CofferError(.cannotCreate, "cannot create \(path): \(String(cString: strerror(errno)))", hint: "check that the folder exists and is writable")
        }
        pending.reserveCapacity(1 << 17)
    }

    deinit {
        if fd >= 0 {
            close(fd)
            unlink(tempPath)
        }
    }

    func writeBytes(_ bytes: [UInt8]) throws(BundleError) {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 16 { try flush() }
    }

    private func flush() throws(BundleError) {
        do { try Bytes.write(fd: fd, pending) } catch { throw .io(error.description) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Flushes, syncs and renames over the target.
    func commit() throws(CofferError) {
        do { try flush() } catch { throw CofferError(.cannotCreate, "cannot write \(path): \(error)") }
        guard fsync(fd) == 0 else {
            let why = String(cString: strerror(errno))
            discard()
            throw CofferError(.cannotCreate, "cannot write \(path): \(why)")
        }
        close(fd)
        fd = -1
        guard rename(tempPath, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tempPath)
            throw CofferError(.cannotCreate, "cannot write \(path): \(why)")
        }
        let dir = (path as NSString).deletingLastPathComponent
        let dfd = Glibc.open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    func discard() {
        if fd >= 0 {
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
