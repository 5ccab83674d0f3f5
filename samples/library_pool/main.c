/* main.c - the program's own code run on threads a library starts (pool.c): four workers
 * load and store through tables of their own and hash what they read. Each prints its hash,
 * which depends on its work alone, so the output is the same whatever the interleaving;
 * so are the instructions and the accesses of the program's own code. */
#include <stdio.h>

void pool_run(void (*work)(int), int count);

#define WORKERS 4
#define WORDS 2048

static unsigned tables[WORKERS][WORDS];
static unsigned hashes[WORKERS];

static void work(int index)
{
    unsigned *table = tables[index], h = (unsigned)index + 1;
    for (int round = 0; round < 40; round++)
        for (int i = 0; i < WORDS; i++) {
            table[i] = table[(i * 7 + round) & (WORDS - 1)] + h;
            h = h * 31 + table[i];
        }
    hashes[index] = h;
}

int main(void)
{
    pool_run(work, WORKERS);
    for (int k = 0; k < WORKERS; k++)
        printf("worker %d: %08x\n", k, hashes[k]);
    return 0;
}
