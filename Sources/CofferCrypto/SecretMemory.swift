internal import CSodium
import Foundation
import Synchronization

/// Whether guarded memory could be locked into RAM. `sodium_malloc` calls
/// `mlock` but ignores a failure (RLIMIT_MEMLOCK too low, no privilege),
/// so Coffer locks each allocation again itself — a no-op when sodium's
/// succeeded — and remembers the first failure, which the CLI reports as
/// a warning (docs/threat-model.md): keys could then reach swap.
public enum SecretMemory {
    private static let failure = Mutex<Int32>(0)

    /// `errno` of the first `mlock` that failed in this process, or nil.
    public static var lockFailure: Int32? {
        let e = failure.withLock { $0 }
        return e == 0 ? nil : e
    }

    private static let protection = Mutex<Int32>(0)

    /// `errno` of the first `sodium_mprotect_noaccess` (or `_readonly` after
    /// a write) that failed in this process, or nil: some secret memory
    /// then stayed readable between uses (still wiped when freed).
    public static var protectFailure: Int32? {
        let e = protection.withLock { $0 }
        return e == 0 ? nil : e
    }

    static func recordProtectFailure(_ errno: Int32) {
        let code = errno == 0 ? ENOMEM : errno
        protection.withLock { if $0 == 0 { $0 = code } }
    }

    /// Locks `count` bytes at `pointer` (already locked by libsodium when
    /// that worked) and records a failure.
    static func lock(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        if mlock(pointer, count) != 0 {
            let code = errno == 0 ? ENOMEM : errno
            failure.withLock { if $0 == 0 { $0 = code } }
        }
    }
}
