import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's `fs.protected_symlinks` rule, applied where Coffer follows
/// symbolic links itself (``AtomicFile`` resolves an output path's links
/// by hand, so the kernel never checks them): a link inside a sticky,
/// world-writable folder (such as /tmp) is followed only when this process
/// owns it or the folder's owner does. Another user could otherwise plant
/// `/tmp/out.env -> ~/.bashrc` and have a secret written over the target.
public enum ProtectedSymlinks {
    /// Nil when following the link at `link` is allowed; otherwise why not.
    public static func refusal(link: String) -> String? {
        var ls = stat()
        guard lstat(link, &ls) == 0, ls.st_mode & S_IFMT == S_IFLNK else { return nil }
        let dir = URL(fileURLWithPath: link).deletingLastPathComponent().path
        var ds = stat()
        guard stat(dir, &ds) == 0 else { return nil }
        let sticky = ds.st_mode & S_ISVTX != 0
        let worldWritable = ds.st_mode & S_IWOTH != 0
        guard sticky && worldWritable else { return nil }
        if ls.st_uid == geteuid() || ls.st_uid == ds.st_uid { return nil }
        return "\(link) is a symbolic link owned by another user (uid \(ls.st_uid)) in the shared folder \(dir)"
    }
}
