#ifndef COFFER_CCOFFERSYS_SHIM_H
#define COFFER_CCOFFERSYS_SHIM_H
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/vfs.h>
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

/// The user id of the process at the other end of a connected Unix
/// socket (SO_PEERCRED). struct ucred needs _GNU_SOURCE, which the
/// platform's module does not define, so its layout (pid, uid, gid; three
/// 32-bit numbers on Linux) is spelled here. 0 on success, -1 (errno).
static inline int CCofferSys_peer_uid(int fd, unsigned int *uid) {
    struct { int pid; unsigned int uid; unsigned int gid; } cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    if (length != sizeof cred) { errno = EPROTO; return -1; }
    *uid = cred.uid;
    return 0;
}

/// The file system type (statfs(2)'s f_type) of the one holding `path`,
/// or -1 (errno).
static inline long CCofferSys_fs_type(const char *path) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    return (long)fs.f_type;
}
#endif
