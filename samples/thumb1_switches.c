/* Switches as GCC compiles them for Thumb-1 (ARMv5 or ARMv6 -mthumb, no TBB/TBH): a call of
 * libgcc's __gnu_thumb1_case_uqi/_sqi/_uhi/_shi/_si followed by the table of case offsets,
 * which the helper reads at its return address (decision 0195). Small cases take bytes, a
 * case before the switch takes signed ones, long cases halfwords, very long ones words.
 * And a computed goto, whose table Thumb-1 code indexes in its own way.
 * Prints what each switch computed; exit status 0. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

#define BODY(n) sink = sink * (n) + 1; sink = sink ^ ((n) << 3); sink = sink - (n); sink = sink + sink / 3;
#define BODY4(n) BODY(n) BODY(n + 1) BODY(n + 2) BODY(n + 3)
#define BODY16(n) BODY4(n) BODY4(n + 4) BODY4(n + 8) BODY4(n + 12)

/* Few short cases: byte offsets. */
__attribute__((noinline)) int small(int k) {
    switch (k) {
    case 0: return 11;
    case 1: return sink + 3;
    case 2: return 7 * sink;
    case 3: return sink ^ 5;
    case 4: return sink - 9;
    case 5: return 2;
    case 6: return sink << 2;
    default: return -1;
    }
}

/* An interpreter's loop: a case runs on into the next one, one jumps back to the loop's head
 * (before the table), so its offsets may be signed. */
__attribute__((noinline)) int interpret(const unsigned char *code, int n) {
    int acc = 0, pc = 0, steps = 0;
again:
    while (pc < n) {
        steps++;
        switch (code[pc++]) {
        case 0: acc += 1; break;
        case 1: acc *= 3; /* fall through */
        case 2: acc -= 2; break;
        case 3: acc ^= 0x55; break;
        case 4: if (acc & 1) goto again; acc >>= 1; break;
        case 5: acc = acc * 7 + sink; break;
        case 6: pc = 0; n--; goto again;
        case 7: acc += steps; break;
        case 8: acc = ~acc; break;
        case 9: acc |= 0x100; break;
        default: return acc;
        }
    }
    return acc + steps;
}


/* More cases than a byte counts: the bound is built in a register (movs r3, #32;
 * adds r3, #255; cmp r0, r3). */
#define MANY(n) case n: return sink * (n) + (n);
#define MANY4(n) MANY(n) MANY(n + 1) MANY(n + 2) MANY(n + 3)
#define MANY16(n) MANY4(n) MANY4(n + 4) MANY4(n + 8) MANY4(n + 12)
#define MANY64(n) MANY16(n) MANY16(n + 16) MANY16(n + 32) MANY16(n + 48)
__attribute__((noinline)) int many(int k) {
    switch (k) {
    MANY64(0) MANY64(64) MANY64(128) MANY64(192) MANY16(256) MANY16(272)
    default: return -1;
    }
}

/* Cases that go back to the loop's head, before the table: GCC takes them there straight
 * from the table, so its offsets are signed (bytes here, halfwords in walk_far). */
__attribute__((noinline)) int walk(int k, int n) {
    int acc = 0;
top:
    acc += k + sink;
    k = (k * 5 + 1) & 15;
    if (--n <= 0)
        return acc;
    switch (k & 7) {
    case 0: goto top;
    case 1: acc ^= 3; goto top;
    case 2: acc += 9; break;
    case 3: goto top;
    case 4: acc -= 1; goto top;
    case 5: acc *= 3; break;
    case 6: goto top;
    default: acc += 100; break;
    }
    acc -= sink;
    goto top;
}

__attribute__((noinline)) int walk_far(int k, int n) {
    int acc = 0;
top:
    acc += k + sink;
    k = (k * 5 + 1) & 15;
    if (--n <= 0)
        return acc;
    switch (k & 7) {
    case 0: goto top;
    case 1: BODY16(1) acc ^= sink; goto top;
    case 2: BODY16(2) acc += sink; break;
    case 3: goto top;
    case 5: BODY16(3) acc *= 3; break;
    case 6: goto top;
    default: acc += 100; break;
    }
    acc -= sink;
    goto top;
}

/* Long cases: halfword offsets (words at -O2). */
__attribute__((noinline)) int large(int k) {
    sink = k;
    switch (k) {
    case 0: BODY16(1) break;
    case 1: BODY16(2) break;
    case 2: BODY16(3) break;
    case 3: BODY16(4) break;
    case 5: BODY16(5) break;
    case 6: BODY16(6) break;
    case 7: BODY16(7) break;
    case 9: BODY16(8) break;
    default: return -k;
    }
    return sink;
}

__attribute__((noinline, noreturn)) static void fail(int why) {
    printf("bad %d\n", why);
    exit(2);
}

/* A computed goto (labels as values, as Lua's interpreter dispatches): in Thumb-1 the index
 * is scaled apart from the load (lsls r3, r3, #2; ldr r3, [r3, r2]; mov pc, r3). */
__attribute__((noinline)) int dispatch(const unsigned char *code, int x) {
    static const void *const ops[] = {&&op_add, &&op_mul, &&op_neg, &&op_dbl, &&op_sub, &&op_end};
    int acc = 0;
    goto *ops[*code++];
op_add:
    acc += x;
    goto *ops[*code++];
op_mul:
    acc *= x + sink;
    goto *ops[*code++];
op_neg:
    acc = -acc;
    goto *ops[*code++];
op_dbl:
    acc += acc;
    goto *ops[*code++];
op_sub:
    acc -= x >> 1;
    if (acc == 0x7fffffff)
        fail(acc);  /* never returns: the label after it is reached only through the table */
    goto *ops[*code++];
op_end:
    return acc;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    unsigned char program[64];
    long total = 0;
    for (int i = 0; i < 64; i++)
        program[i] = (unsigned char)((i * 7 + 3) % 11);
    for (int i = 40; i < 64; i++)
        program[i] = (unsigned char)(i % 5);
    program[63] = 5;
    for (int r = 0; r < rounds; r++) {
        sink = r;
        total += small(r % 9);
        total += interpret(program, 20 + r % 40);
        total += large(r % 11) + many(r * 7 % 300);
        total += walk(r, 30 + r % 17) + walk_far(r + 3, 25 + r % 13);
        program[40 + r % 20] = 5;
        total += dispatch(program + 40 + r % 7, r);
        program[40 + r % 20] = (unsigned char)(r % 5);
    }
    printf("total %ld\n", total);
    return 0;
}
