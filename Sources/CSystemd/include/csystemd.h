// sd-bus's declarations (Debian: libsystemd-dev, headers only at build
// time); the definitions are csystemd.c's, which load libsystemd.so.0 at
// run time.
#ifndef CSYSTEMD_H
#define CSYSTEMD_H
#include <systemd/sd-bus.h>

/// Whether libsystemd.so.0 could be loaded.
int csystemd_available(void);
#endif
