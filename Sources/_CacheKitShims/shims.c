// The prefetch hint is header-only (static inline); the checksum lives here.
#include "_CacheKitShims.h"

#include <string.h>

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

static uint32_t crc32c_software(uint32_t crc, const uint8_t *bytes, size_t count) {
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        word ^= crc;
        crc = crc32c_tables[7][word & 0xFF] ^ crc32c_tables[6][(word >> 8) & 0xFF]
            ^ crc32c_tables[5][(word >> 16) & 0xFF] ^ crc32c_tables[4][(word >> 24) & 0xFF]
            ^ crc32c_tables[3][(word >> 32) & 0xFF] ^ crc32c_tables[2][(word >> 40) & 0xFF]
            ^ crc32c_tables[1][(word >> 48) & 0xFF] ^ crc32c_tables[0][word >> 56];
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

