/*
 * clang_a32_switch.c - a dense switch as clang lowers it in A32 code.
 *
 * clang -marm makes it a table of the cases' addresses after the jump, bounded by a check
 * whose default is a return: cmp rI, #127; bxhi lr; add rT, pc, #0; ldr pc, [rT, rI, lsl #2]
 * (other instructions may come between the table's address and the jump). One case goes
 * round the loop again. Prints the sum of the classes.
 */
#include <stdio.h>

__attribute__((noinline)) int classify(int c)
{
    int n = 0;
    for (;;) {
        switch (c) {
        case '\n': case '\r': n += 100; c = ' '; continue;
        case ' ': case '\t': return n + 1;
        case '-': return n + 2;
        case '[': return n + 3;
        case '=': return n + 4;
        case '<': return n + 5;
        case '>': return n + 6;
        case '/': return n + 7;
        case '~': return n + 8;
        case ':': return n + 9;
        case '"': case '\'': return n + 10;
        case '.': return n + 11;
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9': return n + 12;
        case -1: return -1;
        default: return n + 13;
        }
    }
}

int main(void)
{
    long sum = 0;
    for (int i = 0; i < 100000; i++)
        sum += classify((i * 7) % 128);
    printf("%ld\n", sum);
    return 0;
}
