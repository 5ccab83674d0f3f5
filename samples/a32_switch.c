/* LLVM's A32 switches as rustc emits them (decision 0061): ``add rT, pc, #n; ldr rX,
 * [rT, rI, lsl #2]; add pc, rT, rX`` and a table of signed offsets, with cases laid out
 * before the table as well as after it, and other instructions scheduled between the
 * table's address and the jump (the constants the cases share).
 *
 * run(): a bounds-checked switch (cmp; bhi default). mix(): a switch on three bits, every
 * value a case, so there is no bounds check. Built by clang -O2 -marm (tests/test_a32_switches.py).
 */
#include <stdio.h>

__attribute__((noinline)) int run(const unsigned char *code, int n, const int *mem) {
    int acc = 0, carry = 0;
    for (int pc = 0; pc < n; pc++) {
        int v, w;
        switch (code[pc] - 3) {
        case 0: v = mem[0]; w = 1; break;
        case 1: v = mem[1] * 3; w = 2; break;
        case 2: v = 0; w = 0; break;
        case 3: v = acc >> 2; w = mem[2]; break;
        case 4: v = 0; w = 0; break;
        case 5: v = mem[3] ^ acc; w = 5; break;
        case 6: v = 0; w = 0; break;
        case 7: v = acc + 1; w = carry; break;
        default: return acc - 1;
        }
        acc = acc * 3 + v;
        carry = (carry + w) & 0xff;
    }
    return acc + carry;
}

__attribute__((noinline)) unsigned mix(unsigned seed, int rounds) {
    unsigned h = seed, k = 0;
    for (int i = 0; i < rounds; i++) {
        unsigned a, b;
        switch ((h >> 5) & 7) {
        case 0: a = h * 31; b = 0; break;
        case 1: a = h ^ 0x9e3779b9u; b = 1; break;
        case 2: a = 0; b = 0; break;
        case 3: a = h + k; b = 3; break;
        case 4: a = 0; b = 0; break;
        case 5: a = h >> 3; b = k; break;
        case 6: a = 0; b = 0; break;
        case 7: a = h << 7; b = 7; break;
        default: __builtin_unreachable();
        }
        h = h * 1103515245u + 12345u + a;
        k = (k + b) & 0xffff;
    }
    return h ^ k;
}

int main(int argc, char **argv) {
    (void)argv;
    static const unsigned char code[] = {3, 4, 5, 6, 7, 8, 9, 10, 3, 5, 7, 9, 4, 10, 8, 6, 5, 3};
    const int mem[4] = {argc, 3, 5, 7};
    int r = run(code, (int)sizeof code, mem);
    unsigned m = mix((unsigned)r, 200 + argc);
    printf("run %d mix %u\n", r, m);
    return 0;
}
