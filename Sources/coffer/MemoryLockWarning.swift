import CofferCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reports, once at exit, that secret memory could not be locked into RAM
/// (``SecretMemory/lockFailure``): libsodium itself stays silent about it.
/// Likewise when it could not be made inaccessible again after a use
/// (``SecretMemory/protectFailure``; CofferCrypto's SecretBytes says why
/// that is a warning, not an error).
enum MemoryLockWarning {
    static func install() {
        atexit {
            if let code = SecretMemory.protectFailure {
                let line =
                    "coffer: warning: cannot protect key memory between uses (mprotect: \(String(cString: strerror(code)))): keys stayed readable in this process\n"
                    + "coffer: hint: the process may have too many memory mappings (sysctl vm.max_map_count)\n"
                FileHandle.standardError.write(Data(line.utf8))
            }
            guard let code = SecretMemory.lockFailure else { return }
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit)
            let kib = limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur / 1024) KiB"
            let line =
                "coffer: warning: cannot lock key memory into RAM (mlock: \(String(cString: strerror(code))); RLIMIT_MEMLOCK \(kib)): keys may reach swap\n"
                + "coffer: hint: raise the limit (ulimit -l, LimitMEMLOCK=) or use encrypted swap\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
    }
}
