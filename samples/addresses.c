/*
 * addresses.c - prints the address of a global, a heap block and a local.
 *
 * The transparency test of the rewriter: an instrumented binary must print the
 * same three addresses as the original (given the same argv/env sizes), because
 * code, global data, heap and stack must stay where they were.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int global = 42;
static int table[16];

/* A little arithmetic so the program does more than print pointers. */
static int mix(int seed)
{
    int acc = seed;
    for (int i = 0; i < 16; i++) {
        table[i] = acc;
        acc = acc * 31 + i;
    }
    int sum = 0;
    for (int i = 0; i < 16; i++)
        sum ^= table[i] + i;
    return sum;
}

int main(void)
{
    int local = 7;
    char *heap = malloc(100);
    if (heap == NULL)
        return 2;
    memset(heap, 'x', 100);

    printf("global=%p heap=%p local=%p\n", (void *)&global, (void *)heap, (void *)&local);

    int m = mix(global + local);
    printf("mix=%d heap[99]=%c sum=%d\n", m, heap[99], global * local + 1);
    free(heap);
    return (m == mix(49)) ? 0 : 1;
}
