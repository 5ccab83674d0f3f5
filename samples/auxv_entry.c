/*
 * auxv_entry.c - the entry the auxiliary vector names.
 *
 * getauxval(AT_ENTRY) is the program's entry point as the kernel started it: _start.
 * Programs and run times compare it with their own code (a loader telling whether it was
 * run as a program). Prints whether it is _start; exits 0 if so.
 */
#include <stdio.h>
#include <sys/auxv.h>

extern void _start(void);

int main(void)
{
    int same = getauxval(AT_ENTRY) == (unsigned long)_start;
    printf("AT_ENTRY is _start: %d\n", same);
    return !same;
}
