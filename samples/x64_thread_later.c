/* A program that may start threads, working alone first: it walks a table with strides
 * that leave lines and come back to them (so that a cache has hits and misses), then, with
 * no argument, starts a thread and waits for it to end, then walks the table again. The
 * thread runs the C library's usleep, none of the program's code where the C library is
 * shared, so the program's accesses are in the same order every run (main's between
 * pthread_create and pthread_join would otherwise race with the thread's): a trace of them
 * fed to a reference cache must give what a cache simulated in the program counts, before
 * the thread starts and after. With an argument it starts none (one thread throughout). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define WORDS (1 << 11)

static long table[WORDS];

static long walk(long seed)
{
    long sum = 0;
    for (long round = 0; round < 3; round++)
        for (long i = 0; i < WORDS; i += 1 + (i & 7)) {
            long j = (i * 13 + seed) & (WORDS - 1);
            table[j] += i ^ round;
            sum += table[(j + 512) & (WORDS - 1)];
        }
    return sum;
}

int main(int argc, char **argv)
{
    (void)argv;
    long sum = walk(1);
    if (argc < 2) {
        pthread_t thread;
        pthread_create(&thread, 0, (void *(*)(void *))usleep, (void *)1000);
        pthread_join(thread, 0);
    }
    sum += walk(3);
    printf("%ld\n", sum);
    return 0;
}
