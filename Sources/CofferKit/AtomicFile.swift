import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes files that may hold secrets: mode 0600, all or nothing.
public enum AtomicFile {
    /// Writes `data` to `path` atomically: a new 0600 temporary file in the
    /// same folder, fsync, then rename over `path`. On any failure the
    /// temporary file is removed and `path` is untouched.
    public static func writeAtomically(_ data: Data, to path: String) throws(CofferError) {
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        let tmp = dir + "/." + url.lastPathComponent + ".coffer-" + UUID().uuidString.prefix(8) + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let why = String(cString: strerror(errno))
            throw CofferError(.cannotCreate, "cannot create \(path): \(why)", hint: "check that the folder \(dir) exists and is writable")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            // The umask may have cleared bits, never added them; make sure.
            fchmod(fd, 0o600)
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        } catch {
            try? handle.close()
            unlink(tmp)
            throw CofferError(.cannotCreate, "cannot write \(path): \(error.localizedDescription)")
        }
        guard rename(tmp, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tmp)
            throw CofferError(.cannotCreate, "cannot replace \(path): \(why)")
        }
        // Make the rename itself durable.
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }
}
