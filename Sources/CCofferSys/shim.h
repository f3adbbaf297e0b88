#ifndef COFFER_CCOFFERSYS_SHIM_H
#define COFFER_CCOFFERSYS_SHIM_H
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <sys/syscall.h>
#include <unistd.h>

/// prctl(2) is variadic, which Swift cannot call directly.
/// Marks the process non-dumpable: no core file, and no ptrace attach by
/// other unprivileged processes of the same user.
static inline int CCofferSys_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/// pidfd_open(2) has no glibc wrapper before 2.36 and syscall(2) is
/// variadic: a descriptor that polls readable when `pid` has exited, so a
/// parent can wait for a child with a time-out and no polling loop.
/// -1 (errno ENOSYS) on kernels before 5.3.
static inline int CCofferSys_pidfd_open(int pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif
