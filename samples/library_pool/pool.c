/* pool.c - a library that runs its caller's function on threads of its own (as LLVM's
 * parallelFor, a thread pool or a task scheduler does): the executable that calls
 * pool_run names no function that starts a thread. With POOL_ONE_AT_A_TIME set in the
 * environment, each thread is joined before the next starts: the same work, no two
 * threads at once, and not one instruction of the executable's own different. */
#include <pthread.h>
#include <stdlib.h>

struct job {
    void (*work)(int);
    int index;
};

static void *run_job(void *arg)
{
    struct job *job = arg;
    job->work(job->index);
    return 0;
}

/* work(0) ... work(count - 1), each on a thread of its own, all at once or one after the
 * other; returns when every one has. */
void pool_run(void (*work)(int), int count)
{
    int together = getenv("POOL_ONE_AT_A_TIME") == 0;
    pthread_t threads[16];
    struct job jobs[16];
    for (int k = 0; k < count && k < 16; k++) {
        jobs[k].work = work;
        jobs[k].index = k;
        pthread_create(&threads[k], 0, run_job, &jobs[k]);
        if (!together)
            pthread_join(threads[k], 0);
    }
    for (int k = 0; together && k < count && k < 16; k++)
        pthread_join(threads[k], 0);
}
