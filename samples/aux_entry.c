/*
 * aux_entry.c - a program that knows itself by the auxiliary vector (decision 0092).
 *
 * The dynamic linker, run as a program (ld.so PROGRAM ARGS), tells that it is the program
 * and not some program's interpreter by comparing the auxiliary vector's AT_ENTRY, the
 * ELF entry the kernel started the process at, with its own _start. This sample makes the
 * same test and takes one path or the other: an instrumented copy whose AT_ENTRY named
 * its loader stub printed how far that lies from _start instead.
 * Exits with status 3 when the entry is its own.
 */
#include <stdio.h>
#include <sys/auxv.h>

extern char _start[];  /* crt1.o's entry: the ELF entry of this program */

__attribute__((noinline)) static int as_program(unsigned long entry)
{
    printf("the program itself, entry %s\n", (entry & 1) ? "Thumb" : "A32");
    return 3;
}

__attribute__((noinline)) static int as_interpreter(unsigned long entry, unsigned long own)
{
    printf("an interpreter: entry %+ld bytes from _start\n", (long)(entry - own));
    return 0;
}

int main(void)
{
    unsigned long entry = getauxval(AT_ENTRY), own = (unsigned long)_start;
    return entry == own ? as_program(entry) : as_interpreter(entry, own);
}
