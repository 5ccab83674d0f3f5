/* GCC's Thumb-2 switch through a table of offsets whose address is formed by the 32-bit
 * ADR (decision 0082): where the table's register is r8-r14 the 16-bit ``adr`` cannot name
 * it, and capstone reads the wide one as ``addw rT, pc, #n`` (``subw`` for a table behind)::
 *
 *     cmp rI, #N ; bhi default ; addw rT, pc, #n ; ldr.w rX, [rT, rI, lsl #2] ;
 *     add rT, rX ; bx rT
 *     .word case0 - table + 1, ...
 *
 * MariaDB's parse_date_time_format has one (``addw sl, pc, #12``). pick() is that sequence
 * written out (GCC picks a high register only under register pressure); back() forms the
 * table's address with ``subw``, the table before the code. Built by gcc -O2 -mthumb
 * (tests/test_thumb_wide_adr_switch.py).
 */
#include <stdio.h>
#include <stdlib.h>

int pick(int i);
int back(int i);

__asm__(
    "   .syntax unified\n"
    "   .thumb\n"
    "   .text\n"
    "   .global pick\n"
    "   .type pick, %function\n"
    "   .p2align 2\n"
    "   .thumb_func\n"
    "pick:\n"
    "   push {r10, lr}\n"
    "   cmp r0, #5\n"
    "   bhi .Lpick_default\n"
    "   adr.w r10, .Lpick_table\n"
    "   ldr.w r1, [r10, r0, lsl #2]\n"
    "   add r10, r1\n"
    "   bx r10\n"
    "   .p2align 2\n"
    ".Lpick_table:\n"
    "   .word .Lpick0 - .Lpick_table + 1, .Lpick1 - .Lpick_table + 1, .Lpick2 - .Lpick_table + 1\n"
    "   .word .Lpick3 - .Lpick_table + 1, .Lpick4 - .Lpick_table + 1, .Lpick5 - .Lpick_table + 1\n"
    ".Lpick0:\n"
    "   movs r0, #11\n"
    "   pop {r10, pc}\n"
    ".Lpick1:\n"
    "   movs r0, #23\n"
    "   adds r0, r0, r0\n"
    "   pop {r10, pc}\n"
    ".Lpick2:\n"
    "   movs r0, #37\n"
    "   lsls r0, r0, #2\n"
    "   pop {r10, pc}\n"
    ".Lpick3:\n"
    "   movs r0, #41\n"
    "   subs r0, #1\n"
    "   pop {r10, pc}\n"
    ".Lpick4:\n"
    "   movs r0, #53\n"
    "   pop {r10, pc}\n"
    ".Lpick5:\n"
    "   movs r0, #67\n"
    "   adds r0, #2\n"
    "   pop {r10, pc}\n"
    ".Lpick_default:\n"
    "   movs r0, #1\n"
    "   negs r0, r0\n"
    "   pop {r10, pc}\n"
    "   .size pick, . - pick\n"
    "\n"
    "   .global back\n"
    "   .type back, %function\n"
    "   .p2align 2\n"
    "   .thumb_func\n"
    "back:\n"
    "   push {r8, lr}\n"
    "   b .Lback_check\n"
    "   .p2align 2\n"
    ".Lback_table:\n"
    "   .word .Lback0 - .Lback_table + 1, .Lback1 - .Lback_table + 1, .Lback2 - .Lback_table + 1\n"
    ".Lback0:\n"
    "   movs r0, #5\n"
    "   pop {r8, pc}\n"
    ".Lback1:\n"
    "   movs r0, #7\n"
    "   lsls r0, r0, #3\n"
    "   pop {r8, pc}\n"
    ".Lback2:\n"
    "   movs r0, #9\n"
    "   adds r0, #100\n"
    "   pop {r8, pc}\n"
    ".Lback_check:\n"
    "   cmp r0, #2\n"
    "   bhi .Lback_default\n"
    "   adr.w r8, .Lback_table\n"
    "   ldr.w r1, [r8, r0, lsl #2]\n"
    "   add r8, r1\n"
    "   bx r8\n"
    ".Lback_default:\n"
    "   movs r0, #0\n"
    "   pop {r8, pc}\n"
    "   .size back, . - back\n");

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    long sum = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = -1; i < 8; i++)
            sum = sum * 7 + pick(i) + back(i);
    printf("pick %d %d %d back %d %d sum %ld\n", pick(0), pick(5), pick(9), back(1), back(3), sum);
    return (int)(sum & 15);
}
