/* Threads that run the same counted code at once: four workers each sum a loop of their
 * own, and main joins them. Without arguments main first does the same work alone, before
 * any thread exists (the counters then need no lock yet). */
#include <pthread.h>
#include <stdio.h>

static long work(long seed) {
    long s = 0;
    for (long i = 0; i < 200000; i++) s += (i ^ seed) % 7;
    return s;
}

static void *worker(void *arg) {
    long *slot = arg;
    *slot = work(*slot);
    return NULL;
}

int main(int argc, char **argv) {
    (void)argv;
    long alone = work(argc);
    pthread_t threads[4];
    long results[4];
    for (int t = 0; t < 4; t++) {
        results[t] = t + argc;
        pthread_create(&threads[t], NULL, worker, &results[t]);
    }
    for (int t = 0; t < 4; t++) pthread_join(threads[t], NULL);
    printf("%ld %ld %ld %ld %ld\n", alone, results[0], results[1], results[2], results[3]);
    return 0;
}
