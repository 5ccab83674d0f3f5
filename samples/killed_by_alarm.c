/* A program ended by a fatal signal while it makes memory accesses: SIGALRM, its action
 * the default, ends a loop that never stops by itself, 150 ms in. Prints one line first. */
#include <stdio.h>
#include <sys/time.h>

static volatile int table[8192];

int main(void)
{
    printf("start\n");
    fflush(stdout);
    struct itimerval once = {{0, 0}, {0, 150000}};
    setitimer(ITIMER_REAL, &once, 0);
    for (;;)
        for (int i = 0; i < 8192; i += 8)
            table[i] += 2;
}
