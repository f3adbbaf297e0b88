internal import CCofferSys

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Process-wide protections applied at start-up.
public enum ProcessHardening {
    /// Disables core dumps (`RLIMIT_CORE` = 0) and marks the process
    /// non-dumpable (`PR_SET_DUMPABLE` = 0), so guarded key memory never
    /// reaches a core file and other processes of the user cannot ptrace it.
    /// Returns whether both calls succeeded.
    @discardableResult
    public static func disableCoreDumps() -> Bool {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        #if canImport(Glibc)
        let r1 = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #else
        let r1 = setrlimit(RLIMIT_CORE, &limit)
        #endif
        let r2 = CCofferSys_set_not_dumpable()
        return r1 == 0 && r2 == 0
    }

    /// Whether the process is currently dumpable (for tests).
    public static var coreDumpLimit: UInt64 {
        var limit = rlimit()
        #if canImport(Glibc)
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #else
        getrlimit(RLIMIT_CORE, &limit)
        #endif
        return UInt64(limit.rlim_cur)
    }
}
