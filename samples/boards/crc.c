/*
 * crc.c - CRC-32 (the zlib/IEEE 802.3 one) of a 4 KiB buffer of LCG bytes.
 *
 * The buffer is filled from a linear congruential generator (state = state *
 * 1664525 + 1013904223, each byte the top 8 bits of the new state) whose seed
 * lives in .data, so a broken .data copy shows as a wrong CRC.  The CRC is
 * computed twice, bytewise with a 256-entry table built at run time (in .bss) and
 * bitwise, and the two are compared.
 *
 * Prints "seed=<hex> len=<n> crc=<hex>".  Exit status: the low 7 bits of the CRC
 * when both computations agree, 255 otherwise.
 *
 * Built with -DREPEAT=N (benchmarks: a run long enough that QEMU's start-up does not
 * count), it does it N times, round r on the buffer of seed + r, and reports the last.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

/* -DRAMFUNC='__attribute__((section(".ramfunc")))' runs the hot code from RAM
 * (samples/boards/variants.ld copies it there with .data). */
#ifndef RAMFUNC
#define RAMFUNC
#endif

#define BUF_LEN 4096u
#ifndef REPEAT
#define REPEAT 1u
#endif

static uint32_t lcg_seed = 0x2545F491u;
static uint8_t buffer[BUF_LEN];
static uint32_t crc_table[256];

static void fill_buffer(uint8_t *buf, uint32_t len, uint32_t seed)
{
    uint32_t state = seed;
    for (uint32_t i = 0; i < len; i++) {
        state = state * 1664525u + 1013904223u;
        buf[i] = (uint8_t)(state >> 24);
    }
}

static void build_table(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        }
        crc_table[n] = c;
    }
}

RAMFUNC static uint32_t crc32_table(const uint8_t *buf, uint32_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < len; i++) {
        crc = crc_table[(crc ^ buf[i]) & 0xFFu] ^ (crc >> 8);
    }
    return crc ^ 0xFFFFFFFFu;
}

RAMFUNC static uint32_t crc32_bitwise(const uint8_t *buf, uint32_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < len; i++) {
        crc ^= buf[i];
        for (int k = 0; k < 8; k++) {
            uint32_t mask = -(crc & 1u);
            crc = (crc >> 1) ^ (0xEDB88320u & mask);
        }
    }
    return ~crc;
}

int main(void)
{
    uint32_t fast = 0, slow = 0;
    build_table();
    for (uint32_t round = 0; round < REPEAT && fast == slow; round++) {
        fill_buffer(buffer, BUF_LEN, lcg_seed + round);
        fast = crc32_table(buffer, BUF_LEN);
        slow = crc32_bitwise(buffer, BUF_LEN);
    }
    printf("seed=%08" PRIx32 " len=%u crc=%08" PRIx32 "\n", lcg_seed, BUF_LEN, fast);
    if (fast != slow) {
        printf("mismatch: bitwise crc=%08" PRIx32 "\n", slow);
        return 255;
    }
    return (int)(fast & 0x7Fu);
}
