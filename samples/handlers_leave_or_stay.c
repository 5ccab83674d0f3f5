/* A worker thread's signal handler that leaves by siglongjmp ("jump": main sends SIGUSR1
 * a hundred times, and each handler jumps back to the worker's loop) or never returns
 * ("park": the handler waits for ever while main goes on working and then exits). The
 * worker makes loads and stores the whole time, so a signal often finds it inside the
 * analysis. Anvil holds such a signal back until the analysis call returns (decision
 * 0143): before, the handler ran holding the analysis lock, and the program hung. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int cells[8192];
static sigjmp_buf back;
static volatile int ready, jumps, parked;

static void jump_back(int sig)
{
    (void)sig;
    siglongjmp(back, 1);
}

static void park(int sig)
{
    (void)sig;
    parked = 1;
    for (;;)
        pause();
}

static void churn(void)
{
    for (int i = 0; i < 8192; i += 8)
        cells[i] += 1;
}

static void *jumping_worker(void *unused)
{
    (void)unused;
    if (sigsetjmp(back, 1) && ++jumps >= 100)
        return 0;
    ready = 1;
    for (;;)
        churn();
    return 0;
}

static void *parking_worker(void *unused)
{
    (void)unused;
    ready = 1;
    for (;;)
        churn();
    return 0;
}

int main(int argc, char **argv)
{
    int jumping = argc > 1 && strcmp(argv[1], "jump") == 0;
    pthread_t worker;
    signal(SIGUSR1, jumping ? jump_back : park);
    pthread_create(&worker, 0, jumping ? jumping_worker : parking_worker, 0);
    if (jumping) {
        for (int k = 0; k < 100; k++) {
            while (!ready)
                usleep(100);
            ready = 0;
            usleep(1000);
            int before = jumps;
            pthread_kill(worker, SIGUSR1);
            while (jumps == before)
                usleep(100);
        }
        pthread_join(worker, 0);
        printf("jumps %d\n", jumps);
        return 0;
    }
    while (!ready)
        usleep(100);
    usleep(1000);
    pthread_kill(worker, SIGUSR1);
    while (!parked)
        usleep(100);
    long sum = 0;
    for (int round = 0; round < 50; round++) {
        churn();
        sum += cells[round * 8];
    }
    printf("parked, main went on: %d\n", sum > 0);
    exit(0);
}
