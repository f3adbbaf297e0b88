#ifndef COFFER_CCOFFERSYS_SHIM_H
#define COFFER_CCOFFERSYS_SHIM_H
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>

/// prctl(2) is variadic, which Swift cannot call directly.
/// Marks the process non-dumpable: no core file, and no ptrace attach by
/// other unprivileged processes of the same user.
static inline int CCofferSys_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
#endif
