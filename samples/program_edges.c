/*
 * program_edges.c - code at the edges of a program, where counts went missing (decision 0058):
 * - procedures of one 2-byte Thumb instruction reached through pointers in data: a
 *   constructor that only returns (.init_array), callbacks that only return or only
 *   branch (crtstuff's frame_dummy has the same shape), called through a table;
 * - the end through _exit, called directly and reached by a tail call, so the
 *   instructions of _exit's PLT entry run after the last call of the program.
 * Prints a checksum; exits with status 5 (argc > 1: through the tail call).
 */
#include <stdio.h>
#include <unistd.h>

static volatile int constructed;

__attribute__((constructor)) static void nothing_to_construct(void)
{
}

__attribute__((constructor)) static void construct(void)
{
    constructed = 7;
}

__attribute__((noinline)) static int same(int x)
{
    return x;
}

__attribute__((noinline)) static int twice(int x)
{
    return x + x;
}

__attribute__((noinline)) static int again(int x)
{
    return twice(x);
}

/* Pointers in data: the descent knows these procedures only as stored addresses. */
static int (*const volatile table[])(int) = { same, twice, again };

__attribute__((noinline)) static void leave(int status)
{
    _exit(status);  /* a tail call: b.w to _exit's PLT entry */
}

int main(int argc, char **argv)
{
    (void)argv;
    int sum = constructed;
    for (int i = 0; i < 30; i++)
        sum += table[i % 3](i);
    printf("%d\n", sum);
    fflush(stdout);
    if (argc > 1)
        leave(5);
    _exit(5);
}
