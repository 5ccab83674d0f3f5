/* Signal handlers that make memory accesses while the program makes its own
 * (tests/test_x86_64_rehost.py): a profiling timer interrupts the main loop every 50
 * microseconds of CPU time (the kernel's tick, in practice), and the handler stores into a table of its own. Under a tool
 * whose sites make records, the handler's records land in the middle of the main loop's,
 * some while a record of the loop is being appended; the stream must stay whole. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define N 4096

static volatile unsigned long table[64];
static volatile unsigned long handled;
static unsigned long data[N];

static void on_prof(int sig)
{
    (void)sig;
    for (int i = 0; i < 64; i++)
        table[i] += (unsigned long)i;
    handled++;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 30000;  /* the main loop's: about 0.1 s */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_prof;
    action.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &action, NULL);
    struct itimerval every = {{0, 50}, {0, 50}};
    setitimer(ITIMER_PROF, &every, NULL);
    for (int i = 0; i < N; i++)
        data[i] = (unsigned long)i * 2654435761u;
    unsigned long sum = 0;
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < N; i += 1 + (round & 7))
            sum += data[(i * 17) % N] ^ (unsigned long)round;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("sum=%lu handled=%s\n", sum, handled > 0 ? "yes" : "no");
    return 0;
}
