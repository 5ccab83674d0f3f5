/* Zero-initialised data (.bss) read back: prints where it is not zero, which no correct
 * run ever shows, and its address. Built with layouts that put .bss in the executable
 * segment (ld -N, a script with .data before .text), where a copy's loader stub placed
 * after the segment's file bytes would land on it. */
#include <stdio.h>

static volatile unsigned char zeros[3 * 4096 + 100];
int counter;

int main(int argc, char **argv)
{
    unsigned sum = 0;
    int first = -1;
    for (unsigned i = 0; i < sizeof zeros; i++) {
        sum += zeros[i];
        if (zeros[i] && first < 0)
            first = (int)i;
    }
    for (int i = 0; i < 1000 * argc; i++)
        zeros[i % sizeof zeros] = (unsigned char)(zeros[i % sizeof zeros] + i), counter += zeros[i % 7];
    printf("bss sum=%u first_nonzero=%d at %p, counter %d (%s)\n", sum, first, (void *)zeros, counter, argv[0]);
    return sum != 0;
}
