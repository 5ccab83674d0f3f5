/* Sends itself SIGUSR1 COUNT times (argv[1], default 300000) and counts them in a handler:
 * what a signal costs, handler and return included (benchmarks/signal_cost.py). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int handled;

static void on_signal(int sig)
{
    (void)sig;
    handled++;
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 300000;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < count; i++)
        raise(SIGUSR1);
    printf("%d\n", handled);
    return handled == count ? 0 : 1;
}
