/*
 * library_exit/main.c - a program that a shared library ends with _exit, as CHICKEN's
 * runtime ends its programs: the executable's end points (its _fini, its own calls of
 * _exit) are never passed. The executable works first, then hands over to the library.
 */
#include <stdio.h>

void finish(int status);  /* libends.so: flushes stdio and calls _exit(status) */

static unsigned mix(unsigned seed)
{
    for (int i = 0; i < 1000; i++)
        seed = seed * 1103515245u + 12345u + (unsigned)i;
    return seed;
}

int main(int argc, char **argv)
{
    (void)argv;
    printf("mixed %08x\n", mix((unsigned)argc));
    finish(3);
    puts("not reached");
    return 0;
}
