/* A thread blocked in read() on a pipe nobody writes, cancelled; another blocked in
 * pthread_cond_wait, cancelled; the main thread joins both and prints what they left. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int fds[2];
static volatile int cleaned;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void cleanup(void *what) { cleaned += (int)(long)what; }

static void *reader(void *arg)
{
    char c;
    pthread_cleanup_push(cleanup, (void *)1);
    read(fds[0], &c, 1);
    pthread_cleanup_pop(0);
    return arg;
}

static void unlock(void *m) { pthread_mutex_unlock(m); cleaned += 10; }

static void *waiter(void *arg)
{
    pthread_mutex_lock(&lock);
    pthread_cleanup_push(unlock, &lock);
    for (;;)
        pthread_cond_wait(&never, &lock);
    pthread_cleanup_pop(1);
    return arg;
}

int main(void)
{
    pipe(fds);
    for (int round = 0; round < 3; round++) {
        pthread_t r, w;
        void *rr, *wr;
        pthread_create(&r, 0, reader, 0);
        pthread_create(&w, 0, waiter, 0);
        usleep(200000);  /* both blocked by now */
        pthread_cancel(r);
        pthread_cancel(w);
        pthread_join(r, &rr);
        pthread_join(w, &wr);
        printf("round %d: reader %s, waiter %s, cleaned %d\n", round,
               rr == PTHREAD_CANCELED ? "cancelled" : "returned",
               wr == PTHREAD_CANCELED ? "cancelled" : "returned", cleaned);
    }
    return 0;
}
