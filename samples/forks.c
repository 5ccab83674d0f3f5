/*
 * forks.c - a program that forks: the child and the parent each run work of their own
 * (child_work, parent_work) after some shared work before the fork. Used to check that
 * a forked child's results do not mix with its parent's (InHost: a file of its own;
 * ReHost: the parent's stream stays whole).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned shared_work(unsigned n)
{
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s = s * 31 + i;
    return s;
}

__attribute__((noinline)) static unsigned child_work(unsigned n)
{
    unsigned s = 1;
    for (unsigned i = 1; i < n; i++)
        s ^= s * i + 7;
    return s;
}

__attribute__((noinline)) static unsigned parent_work(unsigned n)
{
    unsigned s = 2;
    for (unsigned i = 0; i < n; i++)
        s += s >> 3 ^ i;
    return s;
}

int main(int argc, char **argv)
{
    unsigned n = 1000u + (unsigned)argc * 7u;
    printf("shared %u\n", shared_work(n));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        printf("child %u\n", child_work(n));
        return 3;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %u, child exit %d\n", parent_work(2 * n), WEXITSTATUS(status));
    return 0;
}
