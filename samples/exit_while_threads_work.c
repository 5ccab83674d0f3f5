/* The program ends while its other threads are still running instrumented code: three
 * workers walk a 4 MiB table for ever, in strides that miss a cache (so a cache simulator
 * makes records all the time), and main returns once each has done some rounds. exit()
 * ends the process with the workers in the middle of their loops, as many servers and
 * Go programs end. Prints what main computed and how many workers started; the workers'
 * own progress, which depends on scheduling, is not printed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 3
#define WORDS (1u << 20)

static volatile unsigned table[WORDS];
static volatile unsigned rounds[WORKERS];

static void *worker(void *arg)
{
    unsigned self = (unsigned)(size_t)arg, at = self * 977u;
    for (;;) {
        for (unsigned i = 0; i < 4096; i++) {
            at = (at + 4099u * 16u) % WORDS;  /* a new 64-byte line each time */
            table[at] += self + 1;
        }
        rounds[self]++;
    }
    return NULL;
}

int main(void)
{
    unsigned sum = 0;
    for (unsigned i = 0; i < 100000; i++)
        sum += (i * 2654435761u) >> 7;
    pthread_t threads[WORKERS];
    int started = 0;
    for (size_t t = 0; t < WORKERS; t++)
        started += pthread_create(&threads[t], NULL, worker, (void *)t) == 0;
    for (unsigned t = 0; t < WORKERS; t++)
        while (rounds[t] < 4)
            ;
    printf("sum %u, %d workers started\n", sum, started);
    exit(0);
}
