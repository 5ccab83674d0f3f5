/*
 * memwalk: a data-access workout for the oracles.
 *
 * Strided word loads/stores over a 64 KiB static array, byte and halfword
 * accesses, 64-bit (LDRD/STRD) accesses, a struct copy (LDM/STM), a little
 * double-precision work (VLDR/VSTR) and non-inlined calls (PUSH/POP).
 * Prints a checksum and exits 0.
 */
#include "sample.h"

#define WORDS (64 * 1024 / 4)

static unsigned int arr[WORDS];

struct rec {
    unsigned int a, b, c, d, e, f;
};

static struct rec recs[64];

static unsigned int __attribute__((noinline)) strided_store(unsigned int stride, unsigned int seed)
{
    for (unsigned int i = 0; i < WORDS; i += stride)
        arr[i] = seed + i * 3u;
    return seed;
}

static unsigned int __attribute__((noinline)) strided_sum(unsigned int stride)
{
    unsigned int sum = 0;
    for (unsigned int i = 0; i < WORDS; i += stride)
        sum += arr[i];
    return sum;
}

static unsigned int __attribute__((noinline)) byte_half_walk(void)
{
    volatile unsigned char *bytes = (volatile unsigned char *)arr;
    volatile unsigned short *halves = (volatile unsigned short *)arr;
    unsigned int sum = 0;
    for (unsigned int i = 0; i < 4096; i += 7) {
        bytes[i] = (unsigned char)(bytes[i] + 1u);
        sum += halves[i / 2];
    }
    return sum;
}

static unsigned long long __attribute__((noinline)) dword_walk(void)
{
    volatile unsigned long long *d = (volatile unsigned long long *)arr;
    unsigned long long acc = 0;
    for (unsigned int i = 0; i < 512; i += 3) {
        acc += d[i];
        d[i + 1] = acc;
    }
    return acc;
}

static double dvals[256];

static double __attribute__((noinline)) float_walk(void)
{
    double acc = 0.0;
    for (int i = 0; i < 256; i++)
        dvals[i] = (double)i * 0.5;
    for (int i = 0; i < 256; i += 2)
        acc += dvals[i] * dvals[i + 1];
    return acc;
}

static unsigned int __attribute__((noinline)) copy_recs(void)
{
    unsigned int sum = 0;
    for (unsigned int i = 0; i < 64; i++) {
        recs[i].a = i;
        recs[i].f = i * 5u;
    }
    for (unsigned int i = 1; i < 64; i++) {
        recs[i - 1] = recs[i];
        sum += recs[i - 1].a ^ recs[i - 1].f;
    }
    return sum;
}

int main(void)
{
    unsigned int check = 0;
    check += strided_store(1, 17);
    check += strided_sum(1);
    check += strided_store(16, 5);
    check += strided_sum(16);
    check += strided_sum(64);
    check += byte_half_walk();
    unsigned long long d = dword_walk();
    check += (unsigned int)d ^ (unsigned int)(d >> 32);
    check += copy_recs();
    check += (unsigned int)float_walk();
    put_hex("memwalk checksum ", check);
    return 0;
}
