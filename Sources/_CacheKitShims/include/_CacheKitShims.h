#ifndef CACHEKIT_SHIMS_H
#define CACHEKIT_SHIMS_H

/// Asks the CPU to start loading the cache line at `address` for reading. Never faults, whatever
/// the address (a prefetch of memory freed meanwhile only wastes a fetch), and is not an access
/// in the language's memory model, so it races with nothing.
static inline __attribute__((always_inline)) void _cachekit_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
