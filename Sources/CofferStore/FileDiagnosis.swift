import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why SQLite could not read or write a vault file, in words a user can act
/// on (docs/exit-codes.md): SQLite's own codes say only "unable to open"
/// or "readonly database".
enum FileDiagnosis {
    /// The reason this user cannot read `path`, nil when it can.
    static func whyUnreadable(_ path: String) -> String? {
        guard access(path, R_OK) != 0 else { return nil }
        switch errno {
        case EACCES, EPERM: return "permission denied (this user may not read it)"
        default: return nil
        }
    }

    /// The reason `path` cannot be written, nil when nothing is in the
    /// way: the file system, the file's mode, or its folder (where SQLite
    /// creates its journal next to the vault).
    static func whyUnwritable(_ path: String) -> String? {
        let dir = (path as NSString).deletingLastPathComponent
        var vfs = statvfs()
        if statvfs(dir.isEmpty ? "." : dir, &vfs) == 0, vfs.f_flag & UInt(ST_RDONLY) != 0 {
            return "it is on a read-only file system"
        }
        if access(path, W_OK) != 0, errno == EACCES || errno == EPERM || errno == EROFS {
            return "the file is read-only for this user"
        }
        if access(dir.isEmpty ? "." : dir, W_OK) != 0, errno == EACCES || errno == EPERM || errno == EROFS {
            return "its folder \(dir) is read-only for this user (SQLite writes a journal file there)"
        }
        return nil
    }

    /// `whyUnwritable`, with a generic reason when the cause is elsewhere.
    static func whyReadOnly(_ path: String) -> String {
        whyUnwritable(path) ?? "it was opened read-only"
    }

    /// Whether the file system holding `path` has no space left for this
    /// user.
    static func diskIsFull(_ path: String) -> Bool {
        let dir = (path as NSString).deletingLastPathComponent
        var vfs = statvfs()
        guard statvfs(dir.isEmpty ? "." : dir, &vfs) == 0 else { return false }
        return vfs.f_bavail == 0 || (vfs.f_favail == 0 && vfs.f_files > 0)
    }
}
