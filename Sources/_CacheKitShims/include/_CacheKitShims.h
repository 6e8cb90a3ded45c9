#ifndef CACHEKIT_SHIMS_H
#define CACHEKIT_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/// Asks the CPU to start loading the cache line at `address` for reading. Never faults, whatever
/// the address (a prefetch of memory freed meanwhile only wastes a fetch), and is not an access
/// in the language's memory model, so it races with nothing.
static inline __attribute__((always_inline)) void _cachekit_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

/// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 and SSE 4.2's `crc32` instruction) of
/// `count` bytes at `bytes`, continuing from `crc` (0 to start). Uses the CPU's CRC-32C
/// instruction where it has one (x86-64 with SSE 4.2, ARMv8 with the CRC extension), else
/// tables eight bytes at a time. Either way the result is the same.
uint32_t _cachekit_crc32c(uint32_t crc, const void *bytes, size_t count);

/// `_cachekit_crc32c` by the tables alone, whatever the CPU: for tests that the two agree.
uint32_t _cachekit_crc32c_tables(uint32_t crc, const void *bytes, size_t count);

/// A checksum of `count` bytes for large buffers: CRC-32C over four interleaved lanes of 8-byte
/// words (lane *i* takes the *i*-th word of each 32-byte block), then CRC-32C over the four
/// lanes' values and the bytes after the last whole block. As strong against damage as one
/// CRC-32C, and about three times as fast with the CPU's instruction, whose latency a single
/// chain waits on.
uint32_t _cachekit_checksum(const void *bytes, size_t count);

/// `_cachekit_checksum` by the tables alone, whatever the CPU: for tests that the two agree.
uint32_t _cachekit_checksum_tables(const void *bytes, size_t count);

/// Tells the CPU that the caller is spinning on a lock word (`pause` on x86, `yield` on ARM), so
/// that a sibling hardware thread gets the core's resources and the loop exits without a memory
/// order violation when the word changes.
static inline __attribute__((always_inline)) void _cachekit_spin_hint(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/// Linux only: sleeps while the 32-bit word at `word` holds `expected` (`FUTEX_WAIT_PRIVATE`).
/// Returns at once if it holds something else; may also return spuriously. Elsewhere a no-op.
void _cachekit_futex_wait(const void *word, uint32_t expected);

/// Linux only: wakes one thread sleeping on the word at `word` (`FUTEX_WAKE_PRIVATE`). Elsewhere
/// a no-op.
void _cachekit_futex_wake_one(const void *word);

/// A number for the calling thread: 0, 1, 2, … in the order threads first ask, kept for the
/// thread's life. Threads that ask one after another get consecutive numbers, so that up to *n*
/// of them fall in *n* different stripes of a striped structure, where a hash of their handles
/// puts two in one stripe as soon as there are a few.
uint32_t _cachekit_thread_number(void);

#endif
