/* A switch of twenty cases, which compilers turn into a jump table, run over every case:
 * built with -mcmodel=large, gcc's table holds 64-bit offsets added to its own address. */
#include <stdio.h>

__attribute__((noinline)) unsigned big_switch(unsigned op, unsigned x)
{
    switch (op) {
    case 0: return x + 1;
    case 1: return x * 3;
    case 2: return x ^ 0x55;
    case 3: return x << 2;
    case 4: return x >> 1;
    case 5: return x - 7;
    case 6: return ~x;
    case 7: return x * x;
    case 8: return x + 100;
    case 9: return x | 0x100;
    case 10: return x & 0xff;
    case 11: return x * 17;
    case 12: return x + 12345;
    case 13: return x ^ 0x1234;
    case 14: return x >> 3;
    case 15: return x << 5;
    case 16: return x + 16;
    case 17: return x * 5 + 1;
    case 18: return x ^ 0x12;
    case 19: return x + (x >> 4);
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    (void)argv;
    unsigned x = (unsigned)argc;
    for (unsigned i = 0; i < 2000; i++)
        x = big_switch((i * 7 + x) % 21, x);
    printf("%u\n", x);
    return 0;
}
