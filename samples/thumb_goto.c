/*
 * thumb_goto.c - a computed goto in Thumb code whose table the jump reads through a pointer
 * kept in memory, as glibc's printf does in a static program (its step tables).
 *
 * GCC keeps a Thumb label's address even in data and sets the Thumb bit when it jumps
 * (orr rX, rX, #1; bx rX). The table's address comes from a volatile variable, so no
 * reading of the code before the jump finds the table: the labels are known only as even
 * words in data, most of them also reached by ordinary branches. Decision 0075.
 */
#include <stdio.h>

static const void *const *volatile table_in_memory;

__attribute__((noinline)) static long run(const unsigned char *code, long x, int direct)
{
    static const void *const ops[] = {&&op_add, &&op_mul, &&op_neg, &&op_dbl, &&op_sub, &&op_xor,
                                      &&op_add, &&op_mul, &&op_end};
    table_in_memory = ops;
    long acc = 0;
    if (direct == 1)
        goto op_add;
    if (direct == 2)
        goto op_mul;
    if (direct == 3)
        goto op_neg;
next:
    __asm__ volatile("" ::: "memory");
    goto *table_in_memory[*code++];
op_add:
    acc += x;
    goto next;
op_mul:
    acc *= x + 1;
    goto next;
op_neg:
    acc = -acc;
    goto next;
op_dbl:
    acc += acc ^ 0x55aa;
    goto next;
op_sub:
    acc -= 3 * x - 7;
    goto next;
op_xor:
    acc ^= x << 3;
    goto next;
op_end:
    return acc;
}

int main(int argc, char **argv)
{
    static const unsigned char program[] = {0, 1, 3, 4, 5, 0, 2, 1, 0, 3, 5, 4, 8};
    (void)argv;
    printf("%ld %ld\n", run(program, 5, argc - 1), run(program + 2, 7, argc + 1));
    return 0;
}
