/*
 * x64_big_bss.c - a 1 GB zero-initialised array (a Fortran-style static work area).
 *
 * Built at a fixed address, the image spans more than a gigabyte: the region of the copies
 * goes above it, within the 2 GiB a copy reaches, leaving the heap what room it can.
 * Prints the array's address, a heap block's and a sum over the array.
 */
#include <stdio.h>
#include <stdlib.h>

static char work[1000000000];

int main(void)
{
    long sum = 0;
    for (long i = 0; i < (long)sizeof work; i += 1 << 20) {
        work[i] = (char)i;
        sum += work[i];
    }
    void *block = malloc(64);
    printf("work %p heap %p sum %ld\n", (void *)work, block, sum);
    free(block);
    return 0;
}
