/* Threads adding to shared counters with exclusive pairs whose windows hold other
 * accesses: a load of a global between LDREX and STREX (as Go's compare-and-swap reads
 * runtime.goarm there), a byte and a halfword pair, and C11 atomics (the compiler's own
 * LDREX/STREX loops, and glibc's locks in a static program). The totals are exact only if
 * every pair stays atomic; a copy whose hooks break the pairs' monitor loops for ever. */
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

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        add_word(&word_total);
        add_half(&half_total);
        add_byte(&byte_total);
        cas_add(&cas_total);
        atomic_fetch_add(&c11_total, step);
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
    unsigned want = threads * ROUNDS;
    return word_total == want && cas_total == want && half_total == (unsigned short)want && byte_total == (unsigned char)want
        && atomic_load(&c11_total) == want ? 0 : 1;
}
