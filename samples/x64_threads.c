/* Four threads, each loading and storing every element of its own slice of a global array
 * three times (volatile: one 8-byte load and one 8-byte store an element and round). It
 * prints the array's address and size, so that a trace of every access can be checked. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ELEMENTS 2000
#define ROUNDS 3

static volatile long data[THREADS][ELEMENTS];

static void *worker(void *arg)
{
    long t = (long)arg;
    for (long r = 0; r < ROUNDS; r++)
        for (long i = 0; i < ELEMENTS; i++)
            data[t][i] += i + r;
    return 0;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], 0, worker, (void *)t);
    long sum = 0;
    for (long t = 0; t < THREADS; t++)
        pthread_join(threads[t], 0);
    for (long t = 0; t < THREADS; t++)
        for (long i = 0; i < ELEMENTS; i++)
            sum += data[t][i];
    printf("%ld %p %zu %d\n", sum, (void *)data, sizeof data, ROUNDS);
    return 0;
}
