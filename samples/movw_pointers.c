/*
 * movw_pointers.c - functions whose only reference is their address, built in a register
 * by movw/movt (clang's A32 code for a fixed-address program; sbcl's C runtime as Debian
 * ships it): a static signal handler given to sigaction, a static function stored in a
 * table and called through it.
 *
 * Prints "<handler's sum> <table call's result>" (324 84 with one argument).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int hits;

static int __attribute__((noinline)) work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += i * i % 7;
    return s;
}

static void handler(int sig)
{
    hits += work(50) + sig;
}

static int (*table[4])(int);

static int __attribute__((noinline)) twice(int x)
{
    return work(x) * 2;
}

int main(int argc, char **argv)
{
    (void)argv;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, 0);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    table[argc & 3] = twice;
    printf("%d %d\n", hits, table[argc & 3](20 + argc));
    return 0;
}
