/*
 * label_table.c - a switch that Thumb-2 code takes through a table of label addresses:
 * ``adr rA, table; ldr pc, [rA, rI, lsl #2]``, GCC's form in fixed-address code when a
 * case lies before the jump, where TBB and TBH cannot go (Debian's python3.11 has them).
 * The table's words follow the jump and read as instructions that run on into the case
 * after them; the cases before the jump are reached only through the table. pick_lr is
 * the position-independent form with LR as the table's register, pick_far the same with
 * its bound set by a MOVW a store comes between.
 *
 * Prints "sum=<decimal>". Exit status 0.
 */
#include <stdio.h>

__attribute__((naked, noinline)) int pick(int i, int y)
{
    __asm__ volatile(
        "b 1f\n\t"
        "2: add r0, r1, #100\n\t"        /* case 0: before the jump */
        "bx lr\n\t"
        "3: eor r0, r1, #0x55\n\t"       /* case 1 */
        "bx lr\n\t"
        "1: cmp r0, #3\n\t"
        "bhi 6f\n\t"
        "adr r2, 7f\n\t"
        "ldr pc, [r2, r0, lsl #2]\n\t"
        ".align 2\n\t"
        "7: .word 2b + 1\n\t"
        ".word 3b + 1\n\t"
        ".word 4f + 1\n\t"
        ".word 5f + 1\n\t"
        "4: lsl r0, r1, #2\n\t"          /* case 2: after the table */
        "bx lr\n\t"
        "5: sub r0, r1, #7\n\t"          /* case 3 */
        "bx lr\n\t"
        "6: movs r0, #0\n\t"             /* the default */
        "bx lr\n\t");
}

/* GCC's switch in position-independent Thumb-2 code with LR as the table's register (its
 * choice when the low registers are taken; Debian's perl): ``adr.w lr, table`` (which
 * capstone reads as ``addw lr, pc, #n``), a table of offsets, and ``bx lr`` to the case:
 * a jump, not a return. */
__attribute__((naked, noinline)) int pick_lr(int i, int y)
{
    __asm__ volatile(
        "push {r4, lr}\n\t"
        "cmp r0, #3\n\t"
        "bhi 9f\n\t"
        "adr.w lr, 8f\n\t"
        "ldr.w r0, [lr, r0, lsl #2]\n\t"
        "add lr, r0\n\t"
        "bx lr\n\t"
        ".align 2\n\t"
        "8: .word 4f - 8b + 1\n\t"
        ".word 5f - 8b + 1\n\t"
        ".word 6f - 8b + 1\n\t"
        ".word 7f - 8b + 1\n\t"
        "4: add r0, r1, #3\n\t"
        "pop {r4, pc}\n\t"
        "5: eor r0, r1, #0x33\n\t"
        "pop {r4, pc}\n\t"
        "6: lsl r0, r1, #3\n\t"
        "pop {r4, pc}\n\t"
        "7: sub r0, r1, #9\n\t"
        "pop {r4, pc}\n\t"
        "9: movs r0, #1\n\t"
        "pop {r4, pc}\n\t");
}

/* The same switch with its bound in a register, set by a MOVW that the compiler scheduled
 * a store after (Debian's bison: ``movw r3, #263; strd ...; cmp sl, r3; bhi``). */
__attribute__((naked, noinline)) int pick_far(int i, int y)
{
    __asm__ volatile(
        "push {r4, lr}\n\t"
        "sub sp, #8\n\t"
        "movw r3, #3\n\t"
        "str r1, [sp]\n\t"
        "cmp r0, r3\n\t"
        "bhi 9f\n\t"
        "adr r2, 8f\n\t"
        "ldr.w r3, [r2, r0, lsl #2]\n\t"
        "add r2, r3\n\t"
        "bx r2\n\t"
        ".align 2\n\t"
        "8: .word 4f - 8b + 1\n\t"
        ".word 5f - 8b + 1\n\t"
        ".word 6f - 8b + 1\n\t"
        ".word 7f - 8b + 1\n\t"
        "4: ldr r0, [sp]\n\t"
        "adds r0, #5\n\t"
        "b 10f\n\t"
        "5: ldr r0, [sp]\n\t"
        "lsls r0, r0, #1\n\t"
        "b 10f\n\t"
        "6: ldr r0, [sp]\n\t"
        "mvns r0, r0\n\t"
        "b 10f\n\t"
        "7: ldr r0, [sp]\n\t"
        "subs r0, #2\n\t"
        "b 10f\n\t"
        "9: movs r0, #2\n\t"
        "10: add sp, #8\n\t"
        "pop {r4, pc}\n\t");
}

int main(void)
{
    long sum = 0;
    for (int k = 0; k < 3000; k++)
        sum += pick(k % 5, k) + pick_lr(k % 5, k) + pick_far(k % 5, k);
    printf("sum=%ld\n", sum);
    return 0;
}
