internal import CCofferSys
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Temporary files coffer writes beside their final name (a bundle before
/// its rename, a vault before `init` or `clone` links it into place). A
/// writer holds an exclusive `flock` on its temporary file while it works;
/// a process killed part-way leaves the file unlocked, and the next
/// `sync`, `export`, `clone` or `init` sweeps it once it is older than
/// ``staleAge`` (docs/reliability.md).
public enum TempFiles {
    /// How old an unlocked temporary file must be to count as litter.
    public static let staleAge: TimeInterval = 5 * 60

    /// Takes the writer's lock on an open temporary file (never blocks: the
    /// file was just created with `O_EXCL`, no one else has it).
    public static func lock(fd: Int32) {
        _ = flock(fd, LOCK_EX | LOCK_NB)
    }

    /// Removes the files of `dir` whose names `isOurs` accepts, that are
    /// regular files (not links), older than `olderThan` seconds (by
    /// modification time) and not locked by a live writer. A name whose
    /// `lockedBy` companion (a SQLite journal's database) is locked is
    /// kept too. Returns the names removed. Never follows links, never
    /// fails: what cannot be removed stays. `names`, when given, is a
    /// listing of `dir` the caller already made (no second listing).
    @discardableResult
    public static func sweep(
        dir: String, names listed: [String]? = nil, olderThan: TimeInterval = staleAge, now: Date = Date(),
        isOurs: (String) -> Bool, lockedBy: (String) -> String? = { _ in nil }
    ) -> [String] {
        guard let names = listed ?? (try? FileManager.default.contentsOfDirectory(atPath: dir.isEmpty ? "." : dir)) else { return [] }
        let prefix = dir.isEmpty ? "" : (dir.hasSuffix("/") ? dir : dir + "/")
        var removed: [String] = []
        for name in names.sorted() where isOurs(name) {
            let path = prefix + name
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            let age = now.timeIntervalSince1970 - (Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
            guard age >= olderThan else { continue }
            if let owner = lockedBy(name), isLocked(prefix + owner) { continue }
            guard !isLocked(path) else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    /// Whether a live process holds a `flock` on `path`.
    static func isLocked(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    /// Whether `name` is exactly `count` lower-case hex digits (coffer's
    /// random suffixes of temporary names).
    public static func isRandomSuffix(_ name: Substring, count: Int = 12) -> Bool {
        name.count == count && name.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
    }
}

/// The disk (mounted file system) a path lives on, for messages such as
/// "no space left on the disk mounted at /home".
public enum Disk {
    /// The mount point of the file system holding `path` (or its nearest
    /// existing parent): the highest ancestor on the same device.
    public static func mountPoint(of path: String) -> String? {
        var current = URL(fileURLWithPath: path).standardizedFileURL.path
        var st = stat()
        while stat(current, &st) != 0 {
            let parent = (current as NSString).deletingLastPathComponent
            if parent == current || parent.isEmpty { return nil }
            current = parent
        }
        let device = st.st_dev
        while current != "/" {
            let parent = (current as NSString).deletingLastPathComponent
            var pst = stat()
            guard stat(parent, &pst) == 0, pst.st_dev == device else { return current }
            current = parent
        }
        return "/"
    }

    /// Whether `path` is on a memory file system (tmpfs), whose files
    /// never reach a disk (unless the system swaps).
    public static func isMemoryFileSystem(_ path: String) -> Bool {
        CCofferSys_fs_type(path) == 0x0102_1994 // TMPFS_MAGIC
    }

    /// "the disk mounted at M" for `path`, or "the disk that holds PATH".
    public static func describe(holding path: String) -> String {
        if let m = mountPoint(of: path) { return "the disk mounted at \(m) (holding \(path))" }
        return "the disk that holds \(path)"
    }
}
