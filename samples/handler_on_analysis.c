/* A signal handler run on top of Anvil's analysis code (tests/test_handler_on_analysis.py).
 *
 * main calls poke() ROUNDS times. Under the test's tool (tests/data/tools/raiser.py), the
 * routine called at poke's entry sends the process SIGUSR1, so the program's handler runs
 * while the analysis routine is in the middle of its system call, on the analysis stack.
 * The handler is instrumented too (its entry calls the routine again) and asks for its own
 * action with sigaction, which Anvil's runtime looks at first (anvil_signal_action). Without
 * the tool no signal comes: the handler runs only under it, once per poke. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 50

static volatile unsigned handled, poked;

static void on_usr1(int sig)
{
    struct sigaction now;
    sigaction(sig, NULL, &now);
    handled += now.sa_handler == on_usr1;
}

static void __attribute__((noinline)) poke(unsigned i)
{
    poked += i;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    for (unsigned i = 0; i < ROUNDS; i++)
        poke(i);
    printf("handled=%u poked=%u\n", handled, poked);
    return 0;
}
