/*
 * filter.c - a 15-tap Q15 fixed-point FIR low-pass filter over a generated signal.
 *
 * Input (512 Q15 samples): a sawtooth, plus a square wave flipping every 37
 * samples, plus LCG noise:
 *   saw(n)    = (n * 700) mod 32768 - 16384
 *   square(n) = +8192 when (n / 37) is even, -8192 otherwise
 *   noise(n)  = (state >> 19) - 4096, state = state * 1664525 + 1013904223 (seed in .data)
 * Coefficients (Q15, triangular, DC gain 1.75): h[k] = (min(k, 14 - k) + 1) * 896.
 * The gain makes some outputs saturate; |acc| stays below 2^31 (57344 * 28672).
 * Output: y(n) = saturate16((sum_k h[k] * x(n - k) + 2^14) >> 15) with x(n < 0) = 0,
 * computed sample by sample through a circular delay line.
 *
 * Prints "n=512 taps=15 checksum=<hex> saturated=<count>" (checksum = c * 31 +
 * (uint16_t)y(n) mod 2^32 over n, from c = 0) and "y[i]=<value>" for a few i.
 * Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

/* -DRAMFUNC='__attribute__((section(".ramfunc")))' runs the hot code from RAM
 * (samples/boards/variants.ld copies it there with .data). */
#ifndef RAMFUNC
#define RAMFUNC
#endif

#define SAMPLES 512
#define TAPS 15

static const int16_t coeffs[TAPS] = {
    896, 1792, 2688, 3584, 4480, 5376, 6272, 7168, 6272, 5376, 4480, 3584, 2688, 1792, 896,
};

static uint32_t noise_seed = 0xC0FFEE11u;
static int16_t input[SAMPLES];
static int16_t output[SAMPLES];
static unsigned saturated;

struct fir {
    int16_t delay[TAPS];
    unsigned head; /* index of the newest sample */
};

static struct fir filter_state;

static int16_t saturate16(int32_t v)
{
    if (v > INT16_MAX) {
        saturated++;
        return INT16_MAX;
    }
    if (v < INT16_MIN) {
        saturated++;
        return INT16_MIN;
    }
    return (int16_t)v;
}

RAMFUNC static int16_t fir_step(struct fir *f, int16_t sample)
{
    f->head = (f->head + 1) % TAPS;
    f->delay[f->head] = sample;
    int32_t acc = 1 << 14; /* rounding */
    unsigned idx = f->head;
    for (unsigned k = 0; k < TAPS; k++) {
        acc += (int32_t)coeffs[k] * f->delay[idx];
        idx = idx == 0 ? TAPS - 1 : idx - 1;
    }
    return saturate16(acc >> 15);
}

static void generate(int16_t *x, unsigned n, uint32_t seed)
{
    uint32_t state = seed;
    for (unsigned i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        int32_t saw = (int32_t)((i * 700u) % 32768u) - 16384;
        int32_t square = ((i / 37u) % 2u == 0u) ? 8192 : -8192;
        int32_t noise = (int32_t)(state >> 19) - 4096;
        x[i] = (int16_t)(saw + square + noise);
    }
}

int main(void)
{
    generate(input, SAMPLES, noise_seed);
    uint32_t checksum = 0;
    for (unsigned i = 0; i < SAMPLES; i++) {
        output[i] = fir_step(&filter_state, input[i]);
        checksum = checksum * 31u + (uint16_t)output[i];
    }
    printf("n=%d taps=%d checksum=%08" PRIx32 " saturated=%u\n", SAMPLES, TAPS, checksum, saturated);
    static const unsigned shown[] = {0, 1, 7, 14, 100, 255, 511};
    for (unsigned i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        printf("y[%u]=%d\n", shown[i], output[shown[i]]);
    }
    return 0;
}
