import CofferCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reports, once at exit, that secret memory could not be locked into RAM
/// (``SecretMemory/lockFailure``): libsodium itself stays silent about it.
enum MemoryLockWarning {
    static func install() {
        atexit {
            guard let code = SecretMemory.lockFailure else { return }
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit)
            let kib = limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur / 1024) KiB"
            let line = "coffer: warning: cannot lock key memory into RAM (mlock: \(String(cString: strerror(code))); RLIMIT_MEMLOCK \(kib)): keys may reach swap\n"
                + "coffer: hint: raise the limit (ulimit -l, LimitMEMLOCK=) or use encrypted swap\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
    }
}
