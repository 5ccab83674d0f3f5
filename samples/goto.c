/*
 * goto.c - a computed goto: a tiny interpreter whose handlers are reached only through a
 * table of label addresses (GCC's labels as values, as in glibc's printf).
 *
 * In a fixed-address program the table's words are plain numbers (no relocation names
 * them): a stripped copy's recursive descent finds the handlers only by reading the table
 * the jump goes through (jump_tables.GotoFinder).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long run(const unsigned char *code, long x)
{
    static const void *const ops[] = {&&op_add, &&op_mul, &&op_neg, &&op_dbl, &&op_end};
    long acc = 0;
    goto *ops[*code++];
op_add:
    acc += x;
    goto *ops[*code++];
op_mul:
    acc *= x + 1;
    goto *ops[*code++];
op_neg:
    acc = -acc;
    goto *ops[*code++];
op_dbl:
    acc += acc;
    goto *ops[*code++];
op_end:
    return acc;
}

int main(int argc, char **argv)
{
    static const unsigned char program[] = {0, 1, 3, 0, 2, 1, 0, 3, 4};
    long x = argc > 1 ? strtol(argv[1], NULL, 0) : 5;
    printf("%ld\n", run(program, x));
    return 0;
}
