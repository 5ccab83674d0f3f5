/* A program that compares the handlers it reads back with the ones it set: sigaction's
 * old action, sigaction with no new one, signal's return value; it puts a saved action
 * back and calls a saved handler (a chain), and reads a queued value through SA_SIGINFO.
 * Anvil gives the kernel a wrapper in each handler's place (decision 0143): the program
 * must still read back its own handlers. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int first_calls, second_calls, value_seen;

static void first(int sig)
{
    (void)sig;
    first_calls++;
}

static void (*chained)(int);

static void second(int sig)
{
    second_calls++;
    if (chained)
        chained(sig);
}

static void with_info(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)context;
    value_seen = info->si_value.sival_int;
}

int main(void)
{
    struct sigaction set, old, now;
    memset(&set, 0, sizeof set);
    set.sa_handler = first;
    sigaction(SIGUSR1, &set, &old);
    printf("default before: %d\n", old.sa_handler == SIG_DFL);
    sigaction(SIGUSR1, 0, &now);
    printf("read back: %d\n", now.sa_handler == first);

    set.sa_handler = second;
    sigaction(SIGUSR1, &set, &old);
    printf("old is first: %d\n", old.sa_handler == first);
    chained = old.sa_handler;
    raise(SIGUSR1);
    printf("chain: second %d first %d\n", second_calls, first_calls);

    sigaction(SIGUSR1, &old, 0);  /* put first back */
    raise(SIGUSR1);
    sigaction(SIGUSR1, 0, &now);
    printf("put back: %d, first %d second %d\n", now.sa_handler == first, first_calls, second_calls);

    void (*previous)(int) = signal(SIGUSR2, first);
    void (*again)(int) = signal(SIGUSR2, second);
    printf("signal: %d %d\n", previous == SIG_DFL, again == first);

    memset(&set, 0, sizeof set);
    set.sa_sigaction = with_info;
    set.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN, &set, 0);
    sigaction(SIGRTMIN, 0, &now);
    union sigval value = {.sival_int = 4242};
    sigqueue(getpid(), SIGRTMIN, value);
    printf("siginfo: %d value %d\n", now.sa_sigaction == with_info && (now.sa_flags & SA_SIGINFO), value_seen);
    return 0;
}
