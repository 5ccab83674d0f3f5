/*
 * xo_switches.c - switches as clang lowers them in execute-only Thumb code.
 *
 * With -mexecute-only no table may sit in the code, so clang makes a switch a computed
 * jump into a row of branches: addw rB, pc, #k; add.w rT, rB, rI, lsl #2; mov pc, rT;
 * b.w case0; b.w case1; ... Its bounds check may return from an IT block (step), or there
 * is none where the index's range is known (masked). Prints the two sums.
 */
#include <stdio.h>

__attribute__((noinline)) int step(int op, int acc)
{
    switch (op) {
    case 0: acc += 3; break;
    case 1: acc ^= 0x55; break;
    case 2: acc *= 3; break;
    case 3: acc -= 7; break;
    case 4: acc >>= 1; break;
    case 5: acc += op * 11; break;
    case 6: acc |= 0x100; break;
    case 7: acc &= 0xfff; break;
    default: acc = -acc;
    }
    return acc;
}

__attribute__((noinline)) unsigned masked(unsigned x, unsigned acc)
{
    switch (x & 7) {
    case 0: return acc + 1;
    case 1: return acc * 5;
    case 2: return acc ^ x;
    case 3: return acc - 9;
    case 4: return acc + (x >> 3);
    case 5: return acc << 1;
    case 6: return acc | 0x40;
    case 7: return acc & 0xffff;
    default: __builtin_unreachable();
    }
}

int main(int argc, char **argv)
{
    (void)argv;
    int acc = argc;
    unsigned other = 7;
    for (int i = 0; i < 5000; i++) {
        acc = step((i * 7 + acc) % 9, acc);
        other = masked((unsigned)i * 13 + other, other);
    }
    printf("%d %u\n", acc, other);
    return 0;
}
