/* thread_fork.c - one thread forks while another works through the program's own code
 * (loads and stores a tool hooks), so that a fork often comes while the other thread is
 * inside the analysis: the child, which has only the forking thread, must not wait for
 * the other. Each child works on its copy of a table and exits with a status that depends
 * on its work; the parent does the same work again and counts the children that agree,
 * so the output does not depend on the interleaving. The worker pauses between rounds,
 * so that a tracing tool's output stays small. Argument: how many children (24). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORDS 1024
static volatile int stop;
static unsigned table[WORDS];

static unsigned churn(unsigned *buf, unsigned seed, int rounds)
{
    unsigned h = seed;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < WORDS; i++) {
            buf[i] = buf[(i * 7) & (WORDS - 1)] + h;
            h = h * 31 + buf[i];
        }
    return h;
}

static void *worker(void *arg)
{
    static unsigned mine[WORDS];
    (void)arg;
    while (!stop) {
        churn(mine, 1, 8);
        usleep(100);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 ? atoi(argv[1]) : 24;
    pthread_t thread;
    pthread_create(&thread, 0, worker, 0);
    int good = 0;
    for (int k = 0; k < forks; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            unsigned h = churn(table, (unsigned)k, 2);
            _exit((int)(h & 0x7f));
        }
        int status = 0;
        waitpid(pid, &status, 0);
        unsigned expect = churn(table, (unsigned)k, 2) & 0x7f;
        good += WIFEXITED(status) && (unsigned)WEXITSTATUS(status) == expect;
    }
    stop = 1;
    pthread_join(thread, 0);
    printf("%d of %d children right\n", good, forks);
    return good == forks ? 0 : 1;
}
