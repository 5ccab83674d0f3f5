/*
 * sort.c - quicksort 1000 LCG numbers; also prints where data, heap and stack live.
 *
 * The numbers come from the LCG state = state * 1664525 + 1013904223 (each value
 * the full 32-bit new state, unsigned), seeded from .data, stored in a malloc'd
 * array and sorted with the hand-written quicksort below (median-of-three Hoare
 * partitioning, insertion sort for short ranges, recursion on the smaller side).
 *
 * Prints
 *   "addr global=0x... heap=0x... local=0x..."  (&sort_calls, the malloc result and
 *                                                the address of a local variable)
 *   "n=1000 checksum=<hex> min=<hex> max=<hex>" with checksum = sum of
 *                                                (i + 1) * a[i] mod 2^32 over the
 *                                                sorted array.
 * Exit status 0 when the array ends up in order with the same sum and xor as
 * before sorting, 1 otherwise (2 if malloc fails).
 *
 * Built with -DREPEAT=N (benchmarks: a run long enough that QEMU's start-up does not
 * count), it first sorts N - 1 other arrays, round r filled from seed + r, and checks
 * their order; what it prints is the same. Without it the code is the one the tests know.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 1000u
#define SMALL 10
#ifndef REPEAT
#define REPEAT 1u
#endif

static uint32_t lcg_seed = 20240611u;
uint32_t sort_calls; /* incremented by every quicksort call; its address is printed */

static void insertion_sort(uint32_t *a, int lo, int hi)
{
    for (int i = lo + 1; i <= hi; i++) {
        uint32_t v = a[i];
        int j = i - 1;
        while (j >= lo && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static void swap(uint32_t *a, int i, int j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static uint32_t median_of_three(uint32_t *a, int lo, int hi)
{
    int mid = lo + (hi - lo) / 2;
    if (a[mid] < a[lo]) {
        swap(a, mid, lo);
    }
    if (a[hi] < a[lo]) {
        swap(a, hi, lo);
    }
    if (a[hi] < a[mid]) {
        swap(a, hi, mid);
    }
    return a[mid];
}

static void quicksort(uint32_t *a, int lo, int hi)
{
    sort_calls++;
    while (hi - lo >= SMALL) {
        uint32_t pivot = median_of_three(a, lo, hi);
        int i = lo - 1;
        int j = hi + 1;
        for (;;) {
            do {
                i++;
            } while (a[i] < pivot);
            do {
                j--;
            } while (a[j] > pivot);
            if (i >= j) {
                break;
            }
            swap(a, i, j);
        }
        /* [lo, j] and [j + 1, hi]: recurse into the smaller part, loop on the other. */
        if (j - lo < hi - j) {
            quicksort(a, lo, j);
            lo = j + 1;
        } else {
            quicksort(a, j + 1, hi);
            hi = j;
        }
    }
    insertion_sort(a, lo, hi);
}

#if REPEAT > 1
/* The benchmark's extra rounds: 1 when every sorted array was in order. */
static int extra_rounds(uint32_t *values)
{
    int ok = 1;
    for (uint32_t round = 1; round < REPEAT; round++) {
        uint32_t state = lcg_seed + round;
        for (uint32_t i = 0; i < COUNT; i++) {
            state = state * 1664525u + 1013904223u;
            values[i] = state;
        }
        quicksort(values, 0, (int)COUNT - 1);
        for (uint32_t i = 1; i < COUNT; i++) {
            if (values[i - 1] > values[i]) {
                ok = 0;
            }
        }
    }
    return ok;
}
#endif

int main(void)
{
    uint32_t local_marker = 0;
    uint32_t *values = malloc(COUNT * sizeof *values);
    if (values == NULL) {
        printf("malloc failed\n");
        return 2;
    }
    printf("addr global=0x%08" PRIxPTR " heap=0x%08" PRIxPTR " local=0x%08" PRIxPTR "\n",
           (uintptr_t)&sort_calls, (uintptr_t)values, (uintptr_t)&local_marker);

#if REPEAT > 1
    if (!extra_rounds(values)) {
        printf("an extra round was not sorted\n");
        return 1;
    }
#endif
    uint32_t state = lcg_seed;
    uint32_t sum_before = 0, xor_before = 0;
    for (uint32_t i = 0; i < COUNT; i++) {
        state = state * 1664525u + 1013904223u;
        values[i] = state;
        sum_before += state;
        xor_before ^= state;
    }

    quicksort(values, 0, (int)COUNT - 1);

    int ok = 1;
    uint32_t checksum = 0, sum_after = 0, xor_after = 0;
    for (uint32_t i = 0; i < COUNT; i++) {
        if (i > 0 && values[i - 1] > values[i]) {
            ok = 0;
        }
        checksum += (i + 1) * values[i];
        sum_after += values[i];
        xor_after ^= values[i];
        local_marker ^= values[i];
    }
    ok = ok && sum_after == sum_before && xor_after == xor_before && local_marker == xor_before;
    printf("n=%u checksum=%08" PRIx32 " min=%08" PRIx32 " max=%08" PRIx32 "\n", COUNT, checksum, values[0],
           values[COUNT - 1]);
    free(values);
    return ok ? 0 : 1;
}
