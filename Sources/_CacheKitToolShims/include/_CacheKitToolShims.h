#ifndef CACHEKIT_TOOL_SHIMS_H
#define CACHEKIT_TOOL_SHIMS_H

#ifdef __linux__
#include <signal.h>
#include <sys/prctl.h>

/// Asks Linux to kill the calling process with SIGKILL when the thread that started it exits
/// (`prctl(PR_SET_PDEATHSIG)`, which Swift cannot call: `prctl` is variadic). Returns 0, or -1
/// with `errno` set.
static inline int _cachekit_die_with_parent(void) {
    return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}
#endif

#endif
