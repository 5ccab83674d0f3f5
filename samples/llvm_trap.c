/* LLVM's trap (`__builtin_trap`, and every Rust panic's end): the UDF encoding capstone
 * calls "trap" (A32 0xe7ffdefe, T32 0xdefe), which does not fall through. In a PIE the
 * function's literal pool follows it; a descent that ran on decoded the pool as code
 * (Debian's fd: a landing pad after the pool read as data, and the rewrite stopped with
 * an internal error; decision 0108). Built by clang, stripped. */
#include <stdio.h>
#include <stdlib.h>

const char *names[] = {"alpha", "beta", "gamma", "delta"};
long table[64];

__attribute__((noinline)) void die(int i)
{
    fputs(names[i & 3], stderr);
    fputs(" out of range\n", stderr);
    __builtin_trap();
}

__attribute__((noinline)) long checked(int i)
{
    if (i < 0 || i >= 64)
        die(i);
    return table[i] + (long)names[i & 3][0];
}

int main(int argc, char **argv)
{
    long sum = 0;
    for (int round = 0; round < 50; round++)
        for (int i = 0; i < 64; i++) {
            table[i] += i * round;
            sum += checked(i);
        }
    printf("sum %ld\n", sum);
    if (argc > 1)
        checked(atoi(argv[1]));  /* traps: SIGILL */
    return 0;
}
