/* A child process sends its parent SIGUSR1 over and over while the parent mixes a table
 * (a Linux sample for signals that find the program inside the analysis:
 * tests/test_signal_storm.py).
 *
 * argv[1]: how many empty loop rounds the child waits between two signals (default 300),
 * few enough that signals land everywhere, also in the few instructions where a call stub
 * holds the analysis lock on the program's stack, and enough that the parent, whose
 * handler runs once for every signal it finds pending, still gets on with its work. The
 * output does not depend on how many signals came: the mix, and whether the handler's
 * count matches the memory it touched. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORDS 4096
#define ROUNDS 400

static volatile unsigned handled;
static volatile unsigned lines[2][16];
static unsigned table[WORDS];

static void on_signal(int sig)
{
    (void)sig;
    unsigned t = handled;
    lines[t & 1][t & 15] += 1;
    handled = t + 1;
}

int main(int argc, char **argv)
{
    unsigned pause = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    pid_t parent = getpid(), child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlives the parent */
        while (getppid() == parent && kill(parent, SIGUSR1) == 0)
            for (volatile unsigned k = 0; k < pause; k++)
                ;
        _exit(0);
    }
    /* The work starts once the storm has: on a loaded machine the child may not run
     * before the parent's work is done. */
    while (handled == 0)
        sched_yield();
    unsigned acc = 1;
    for (unsigned i = 0; i < WORDS; i++)
        table[i] = i * 2654435761u;
    for (int round = 0; round < ROUNDS; round++)
        for (unsigned i = 0; i < WORDS; i++) {
            unsigned j = (table[i] ^ acc) % WORDS;
            acc = acc * 31 + table[j];
            table[j] = acc;
        }
    signal(SIGUSR1, SIG_IGN);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    unsigned sum = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 16; i++)
            sum += lines[k][i];
    printf("acc=%08x handler %s\n", acc, sum == handled && sum > 0 ? "ran, counts match" : "did not run");
    return 0;
}
