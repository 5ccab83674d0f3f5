/* Deep recursion with large frames, built with gcc -fsplit-stack: each function's prologue
 * compares the stack pointer with the segment's limit (%fs:0x70) and, past it, calls
 * __morestack, which allocates a new stack segment and runs the rest of the function from
 * the call's return address + 1 (past the one-byte ret there). */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static unsigned deep(int n, unsigned acc)
{
    volatile char frame[512];
    memset((char *)frame, n & 0xff, sizeof frame);
    if (n == 0)
        return acc;
    return deep(n - 1, acc * 31 + frame[n % 512]) + 1;
}

int main(int argc, char **argv)
{
    (void)argv;
    unsigned r = 0;
    for (int i = 0; i < 20; i++)
        r += deep(2000 + i + argc, (unsigned)i);
    printf("r=%u\n", r);
    return 0;
}
