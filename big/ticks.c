/* A signal handler that touches memory while the main program does (a Linux sample for
 * records made by signal handlers: tests/test_deferred.py).
 *
 * SIGALRM comes every INTERVAL microseconds (argv[1], default 50) while main mixes a
 * table; the handler updates one of two lines in turn and stops the timer on its
 * TARGET-th run (and ignores one already pending), so the handler runs exactly TARGET times wherever the signals fall and
 * every access count is fixed. Only wait_for_ticks, which spins until then, does work
 * that depends on the timing (instrument with --skip wait_for_ticks). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define TARGET 200
#define WORDS 4096
#define ROUNDS 40

static volatile unsigned ticks;
static volatile unsigned lines[2][16];
static unsigned table[WORDS];

static void on_alarm(int sig)
{
    (void)sig;
    unsigned t = ticks;
    lines[t & 1][t & 15] += t;
    ticks = t + 1;
    if (t + 1 == TARGET) {  /* no more: a signal already pending is dropped too */
        struct itimerval off;
        memset(&off, 0, sizeof off);
        setitimer(ITIMER_REAL, &off, NULL);
        signal(SIGALRM, SIG_IGN);
    }
}

static void __attribute__((noinline)) wait_for_ticks(void)
{
    while (ticks < TARGET)
        ;
}

int main(int argc, char **argv)
{
    long interval = argc > 1 ? atol(argv[1]) : 50;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, interval}, {0, interval}};
    setitimer(ITIMER_REAL, &every, NULL);

    unsigned acc = 1;
    for (unsigned i = 0; i < WORDS; i++)
        table[i] = i * 2654435761u;
    for (int round = 0; round < ROUNDS; round++)
        for (unsigned i = 0; i < WORDS; i++) {
            unsigned j = (table[i] ^ acc) % WORDS;
            acc = acc * 31 + table[j];
            table[j] = acc;
        }
    wait_for_ticks();
    unsigned sum = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 16; i++)
            sum += lines[k][i];
    printf("ticks=%u acc=%08x lines=%u\n", ticks, acc, sum);
    return 0;
}
