/* Threads adding to shared counters with exclusive pairs whose windows hold other
 * accesses: a load of a global between LDREX and STREX (as Go's compare-and-swap reads
 * runtime.goarm there), a byte and a halfword pair, and C11 atomics (the compiler's own
 * LDREX/STREX loops, and glibc's locks in a static program). The totals are exact only if
 * every pair stays atomic; a copy whose hooks break the pairs' monitor loops for ever.
 * Built for ARMv8 (-march=armv8-a) the C11 atomics are acquire/release pairs (LDAEX/STLEX,
 * byte to doubleword). A store-exclusive after CLREX must fail (store_after). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 8
#define ROUNDS 20000

static volatile unsigned step = 1;          /* read inside the windows below */
static unsigned word_total;
static unsigned short half_total;
static unsigned char byte_total;
static unsigned cas_total;
static atomic_uint c11_total;
static atomic_uchar c11_byte;
static atomic_ushort c11_half;
static atomic_ullong c11_double;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned locked_total;

__attribute__((noinline)) static void add_word(unsigned *at) {
    unsigned value, failed;
    do {
        __asm__ volatile(
            "ldrex %0, [%2]\n\t"
            "ldr %1, [%3]\n\t"          /* a load inside the window */
            "add %0, %0, %1\n\t"
            "strex %1, %0, [%2]\n\t"
            : "=&r"(value), "=&r"(failed) : "r"(at), "r"(&step) : "memory");
    } while (failed);
}

__attribute__((noinline)) static void add_half(unsigned short *at) {
    unsigned value, failed;
    do {
        __asm__ volatile(
            "ldrexh %0, [%2]\n\t"
            "ldr %1, [%3]\n\t"
            "add %0, %0, %1\n\t"
            "strexh %1, %0, [%2]\n\t"
            : "=&r"(value), "=&r"(failed) : "r"(at), "r"(&step) : "memory");
    } while (failed);
}

__attribute__((noinline)) static void add_byte(unsigned char *at) {
    unsigned value, failed;
    do {
        __asm__ volatile(
            "ldrexb %0, [%2]\n\t"
            "ldr %1, [%3]\n\t"
            "add %0, %0, %1\n\t"
            "strexb %1, %0, [%2]\n\t"
            : "=&r"(value), "=&r"(failed) : "r"(at), "r"(&step) : "memory");
    } while (failed);
}

/* GCC's older compare-and-swap shape: a conditional STREX in an IT block, which does not
 * store (the status stays 1) when another thread changed the word since it was read. */
__attribute__((noinline)) static void cas_add(unsigned *at) {
    unsigned seen, failed;
    do {
        unsigned expected = *(volatile unsigned *)at, desired = expected + step;
        __asm__ volatile(
            "mov %1, #1\n\t"
            "ldrex %0, [%2]\n\t"
            "cmp %0, %3\n\t"
            "it eq\n\t"
            "strexeq %1, %4, [%2]\n\t"
            : "=&r"(seen), "=&r"(failed) : "r"(at), "r"(expected), "r"(desired) : "cc", "memory");
    } while (failed);
}

/* The status of a store-exclusive after LDREX, with CLREX between them when ``clear``:
 * 1 then (the monitor is clear: the store fails), else 0. Both paths share the STREX, so
 * it is inside the LDREX's window. */
__attribute__((noinline)) static unsigned store_after(unsigned *at, unsigned clear) {
    unsigned value, failed;
    __asm__ volatile(
        "ldrex %0, [%2]\n\t"
        "cmp %3, #0\n\t"
        "beq 1f\n\t"
        "clrex\n"
        "1:\n\t"
        "strex %1, %0, [%2]\n\t"
        : "=&r"(value), "=&r"(failed) : "r"(at), "r"(clear) : "cc", "memory");
    return failed;
}

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        add_word(&word_total);
        add_half(&half_total);
        add_byte(&byte_total);
        cas_add(&cas_total);
        atomic_fetch_add(&c11_total, step);
        atomic_fetch_add(&c11_byte, step);
        atomic_fetch_add(&c11_half, step);
        atomic_fetch_add(&c11_double, step);
        if (i % 64 == 0) {
            pthread_mutex_lock(&lock);
            locked_total += step;
            pthread_mutex_unlock(&lock);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;  /* 1: no contention, the same run each time */
    pthread_t t[MAX_THREADS];
    if (threads < 1 || threads > MAX_THREADS)
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], 0);
    printf("word %u half %u byte %u cas %u c11 %u locked %u\n", word_total, (unsigned)half_total,
           (unsigned)byte_total, cas_total, (unsigned)atomic_load(&c11_total), locked_total);
    printf("c11 byte %u half %u double %llu\n", (unsigned)atomic_load(&c11_byte), (unsigned)atomic_load(&c11_half),
           (unsigned long long)atomic_load(&c11_double));
    unsigned kept = store_after(&word_total, 0), cleared = store_after(&word_total, 1);
    printf("store-exclusive after clrex: %u, without: %u\n", cleared, kept);
    unsigned want = threads * ROUNDS;
    return word_total == want && cas_total == want && half_total == (unsigned short)want && byte_total == (unsigned char)want
        && atomic_load(&c11_total) == want && atomic_load(&c11_byte) == (unsigned char)want
        && atomic_load(&c11_half) == (unsigned short)want && atomic_load(&c11_double) == want
        && cleared == 1 && kept == 0 ? 0 : 1;
}
