/* Two threads, each striding through an array of its own that no cache holds: every load
 * and store misses, so a cache simulator's copy calls its routine, under the analysis
 * lock, at nearly every access. A benchmark of the call path's cost (docs/performance.md). */
#include <pthread.h>
#include <stdio.h>

static volatile int big[2][1 << 20];

static void *work(void *arg)
{
    long k = (long)arg, sum = 0;
    for (int round = 0; round < 40; round++)
        for (int i = 0; i < (1 << 20); i += 16)
            sum += big[k][i] += round;
    return (void *)sum;
}

int main(void)
{
    pthread_t threads[2];
    for (long k = 0; k < 2; k++)
        pthread_create(&threads[k], 0, work, (void *)k);
    for (int k = 0; k < 2; k++)
        pthread_join(threads[k], 0);
    printf("%d\n", big[1][16]);
    return 0;
}
