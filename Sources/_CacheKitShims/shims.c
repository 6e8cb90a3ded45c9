// The prefetch and spin hints are header-only (static inline); the futex calls and the checksum
// live here.
#include "_CacheKitShims.h"

#include <string.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// The futex calls behind CacheKit's lock on Linux: a plain futex, which lets a running thread
// take a lock that was just released (no hand-off to a sleeping waiter, unlike FUTEX_LOCK_PI).
void _cachekit_futex_wait(const void *word, uint32_t expected) {
#if defined(__linux__)
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
    (void)word;
    (void)expected;
#endif
}

void _cachekit_futex_wake_one(const void *word) {
#if defined(__linux__)
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)word;
#endif
}

// Numbered from 1 here (0: not yet numbered), from 0 for the caller.
static _Thread_local uint32_t thread_number;
static uint32_t threads_numbered;

uint32_t _cachekit_thread_number(void) {
    uint32_t number = thread_number;
    if (number == 0) {
        number = __atomic_add_fetch(&threads_numbered, 1, __ATOMIC_RELAXED);
        thread_number = number;
    }
    return number - 1;
}

// Software CRC-32C: eight tables, one per byte position of a 64-bit word (slicing by eight),
// filled once when the library loads.
static uint32_t crc32c_tables[8][256];

__attribute__((constructor)) static void crc32c_fill_tables(void) {
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = index;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        crc32c_tables[0][index] = crc;
    }
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = crc32c_tables[0][index];
        for (int table = 1; table < 8; table++) {
            crc = crc32c_tables[0][crc & 0xFF] ^ (crc >> 8);
            crc32c_tables[table][index] = crc;
        }
    }
}

static inline uint32_t crc32c_software_word(uint32_t crc, uint64_t word) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    word ^= crc;
    return crc32c_tables[7][word & 0xFF] ^ crc32c_tables[6][(word >> 8) & 0xFF]
        ^ crc32c_tables[5][(word >> 16) & 0xFF] ^ crc32c_tables[4][(word >> 24) & 0xFF]
        ^ crc32c_tables[3][(word >> 32) & 0xFF] ^ crc32c_tables[2][(word >> 40) & 0xFF]
        ^ crc32c_tables[1][(word >> 48) & 0xFF] ^ crc32c_tables[0][word >> 56];
}

static uint32_t crc32c_software(uint32_t crc, const uint8_t *bytes, size_t count) {
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = crc32c_software_word(crc, word);
        bytes += 8;
        count -= 8;
    }
    while (count--) crc = crc32c_tables[0][(crc ^ *bytes++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t state = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        state = __builtin_ia32_crc32di(state, word);
        bytes += 8;
        count -= 8;
    }
    uint32_t crc32 = (uint32_t)state;
    while (count--) crc32 = __builtin_ia32_crc32qi(crc32, *bytes++);
    return crc32;
}

static int crc32c_has_hardware(void) {
    // Any thread may be first to ask; each stores the same answer.
    static int answer = -1;
    int known = __atomic_load_n(&answer, __ATOMIC_RELAXED);
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&answer, known, __ATOMIC_RELAXED);
    }
    return known;
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count) {
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        crc = __crc32cd(crc, word);
        bytes += 8;
        count -= 8;
    }
    while (count--) crc = __crc32cb(crc, *bytes++);
    return crc;
}

static int crc32c_has_hardware(void) { return 1; }
#else
static uint32_t crc32c_hardware(uint32_t crc, const uint8_t *bytes, size_t count) {
    return crc32c_software(crc, bytes, count);
}

static int crc32c_has_hardware(void) { return 0; }
#endif

uint32_t _cachekit_crc32c_tables(uint32_t crc, const void *bytes, size_t count) {
    return ~crc32c_software(~crc, bytes, count);
}

uint32_t _cachekit_crc32c(uint32_t crc, const void *bytes, size_t count) {
    crc = ~crc;
    crc = crc32c_has_hardware() ? crc32c_hardware(crc, bytes, count) : crc32c_software(crc, bytes, count);
    return ~crc;
}


// Four CRC-32C lanes over the 8-byte words of each 32-byte block (lane i takes word i), so that
// four independent chains keep the CPU's CRC unit busy; then one CRC-32C over the four lanes'
// values (little-endian) and the bytes after the last whole block.
#define CACHEKIT_LANES(step)                                                             \
    uint32_t lanes[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};             \
    while (count >= 32) {                                                                \
        uint64_t words[4];                                                               \
        memcpy(words, bytes, 32);                                                        \
        lanes[0] = step(lanes[0], words[0]);                                             \
        lanes[1] = step(lanes[1], words[1]);                                             \
        lanes[2] = step(lanes[2], words[2]);                                             \
        lanes[3] = step(lanes[3], words[3]);                                             \
        bytes += 32;                                                                     \
        count -= 32;                                                                     \
    }                                                                                    \
    uint8_t summary[16];                                                                 \
    for (int lane = 0; lane < 4; lane++) {                                               \
        for (int byte = 0; byte < 4; byte++) summary[lane * 4 + byte] = (uint8_t)(~lanes[lane] >> (8 * byte)); \
    }

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static inline uint32_t crc32c_hardware_word(uint32_t crc, uint64_t word) {
    return (uint32_t)__builtin_ia32_crc32di(crc, word);
}

__attribute__((target("sse4.2"))) static uint32_t checksum_hardware(const uint8_t *bytes, size_t count) {
    CACHEKIT_LANES(crc32c_hardware_word)
    uint32_t crc = ~crc32c_hardware(0xFFFFFFFFu, summary, 16);
    return _cachekit_crc32c(crc, bytes, count);
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
static inline uint32_t crc32c_hardware_word(uint32_t crc, uint64_t word) { return __crc32cd(crc, word); }

static uint32_t checksum_hardware(const uint8_t *bytes, size_t count) {
    CACHEKIT_LANES(crc32c_hardware_word)
    uint32_t crc = ~crc32c_hardware(0xFFFFFFFFu, summary, 16);
    return _cachekit_crc32c(crc, bytes, count);
}
#else
static uint32_t checksum_hardware(const uint8_t *bytes, size_t count) { return _cachekit_checksum_tables(bytes, count); }
#endif

uint32_t _cachekit_checksum_tables(const void *data, size_t count) {
    const uint8_t *bytes = data;
    CACHEKIT_LANES(crc32c_software_word)
    uint32_t crc = _cachekit_crc32c_tables(0, summary, 16);
    return _cachekit_crc32c_tables(crc, bytes, count);
}

uint32_t _cachekit_checksum(const void *data, size_t count) {
    return crc32c_has_hardware() ? checksum_hardware(data, count) : _cachekit_checksum_tables(data, count);
}
