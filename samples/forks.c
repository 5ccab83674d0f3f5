/*
 * forks.c - a program that forks: the child and the parent each run work of their own
 * (child_work, parent_work) after some shared work before the fork; the child forks a
 * grandchild. Used to check that
 * a forked child's results are its own and go on from its parent's at the fork (InHost:
 * a file of its own; ReHost: a session of its own that starts with its parent's stream
 * up to the fork). The walks over a 4 MiB buffer touch a new cache line at every step:
 * cachesim's ReHost stream has sent more than one ring of records before the fork.
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

static unsigned char buffer[1u << 22];

__attribute__((noinline)) static unsigned walk(unsigned start, unsigned step)
{
    unsigned s = 0;
    for (unsigned i = start; i < sizeof buffer; i += step) {
        buffer[i] = (unsigned char)(i >> 6);
        s += buffer[i ^ 64];
    }
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
    printf("shared %u %u\n", shared_work(n), walk(0, 64));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        printf("child %u %u\n", child_work(n), walk(32, 96));
        fflush(stdout);
        pid_t grandchild = fork();  /* a child of the child: its stream goes on from the child's */
        if (grandchild == 0) {
            printf("grandchild %u\n", walk(16, 160));
            return 5;
        }
        int status = 0;
        waitpid(grandchild, &status, 0);
        return grandchild > 0 && WEXITSTATUS(status) == 5 ? 3 : 4;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %u, child exit %d\n", parent_work(2 * n), WEXITSTATUS(status));
    return 0;
}
