/* A program that leaves a command running in the background as it ends (a shell's `&`, as
 * programs that start an agent or a daemon do): `cat job.fifo`, which waits for a writer on
 * the FIFO its runner made (its output and errors to /dev/null: it holds none of the
 * runner's pipes). The program itself ends at once. ReHost's channel must not be
 * passed on to the command (tests/test_rehost_faults.py): `anvil run` waits for the last
 * copy of the channel to close, and would wait for the background job. */
#include <stdio.h>
#include <stdlib.h>

static unsigned table[1024];

__attribute__((noipa)) static unsigned work(unsigned seed)
{
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        seed = table[i] = seed * 3 + i;
    return seed;
}

int main(void)
{
    int status = system("cat job.fifo > /dev/null 2>&1 &");
    printf("started %d, %u\n", status, work(7));
    return 0;
}
