/* Four threads, each adding into a row of its own in a loop, started and joined by main; with
 * the argument "one", each is joined before the next starts (the same work, no two at
 * once). Built with -fno-plt, the calls of pthread_create go through the GOT, not a PLT
 * entry (as Rust's standard library calls it). Prints the sum, the same either way. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
static unsigned long counts[THREADS][8];

static void *work(void *arg)
{
    long k = (long)arg;
    for (long i = 0; i < 2000000; i++)
        counts[k][i & 7] += (unsigned long)i;
    return 0;
}

int main(int argc, char **argv)
{
    int one = argc > 1 && strcmp(argv[1], "one") == 0;
    pthread_t threads[THREADS];
    for (long k = 0; k < THREADS; k++) {
        pthread_create(&threads[k], 0, work, (void *)k);
        if (one)
            pthread_join(threads[k], 0);
    }
    for (int k = 0; !one && k < THREADS; k++)
        pthread_join(threads[k], 0);
    unsigned long sum = 0;
    for (int k = 0; k < THREADS; k++)
        for (int j = 0; j < 8; j++)
            sum += counts[k][j];
    printf("%lu\n", sum);
    return 0;
}
