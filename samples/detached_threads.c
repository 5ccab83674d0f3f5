/*
 * detached_threads.c - threads that end detached.
 *
 * A detached thread's end frees its own stack: musl unmaps it (__unmapself) and then makes
 * the exit system call with no stack left, so nothing may push there. Main waits until
 * every thread has posted its work, then a while for their ends. Prints the sum.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <unistd.h>

#define THREADS 4

static sem_t done;
static long sums[THREADS];

static void *work(void *arg)
{
    long k = (long)arg, sum = 0;
    for (long i = 0; i < 100000; i++)
        sum += i % (k + 3);
    sums[k] = sum;
    sem_post(&done);
    return 0;
}

int main(void)
{
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sem_init(&done, 0, 0);
    for (long k = 0; k < THREADS; k++) {
        pthread_t thread;
        if (pthread_create(&thread, &attributes, work, (void *)k))
            return 1;
    }
    long total = 0;
    for (int k = 0; k < THREADS; k++)
        sem_wait(&done);
    usleep(200000);  /* the threads' ends */
    for (int k = 0; k < THREADS; k++)
        total += sums[k];
    printf("sum %ld\n", total);
    return 0;
}
