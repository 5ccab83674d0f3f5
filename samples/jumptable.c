/*
 * jumptable.c - a jump table read by `ldr pc, [pc, rN, lsl #2]`, the A32 form compilers
 * and hand-written assembly use for switches (GCC 12 emits `addls pc, pc, rN, lsl #2`
 * instead, so this one is written out). dispatch() is A32 whatever the build's default
 * instruction set, and is called from C (Thumb or A32: interworking through BLX).
 * Prints a checksum of many dispatches and exits 0.
 */
#include <stdio.h>

unsigned dispatch(unsigned op, unsigned x);

__asm__(
    "  .text\n"
    "  .arm\n"
    "  .align 2\n"
    "  .global dispatch\n"
    "  .type dispatch, %function\n"
    "dispatch:\n"
    "  cmp r0, #5\n"
    "  ldrls pc, [pc, r0, lsl #2]\n"   /* pc reads as this instruction + 8: the table */
    "  b 7f\n"
    "  .word 1f, 2f, 3f, 4f, 5f, 6f\n"
    "1: add r0, r1, #1\n"
    "  bx lr\n"
    "2: lsl r0, r1, #1\n"
    "  bx lr\n"
    "3: eor r0, r1, r1, lsr #3\n"
    "  bx lr\n"
    "4: mul r0, r1, r1\n"
    "  bx lr\n"
    "5: sub r0, r1, #7\n"
    "  cmp r0, #100\n"
    "  addhi r0, r0, #3\n"
    "  bx lr\n"
    "6: mvn r0, r1\n"
    "  bx lr\n"
    "7: mov r0, r1\n"
    "  bx lr\n"
    "  .size dispatch, . - dispatch\n"
);

int main(void)
{
    unsigned sum = 0;
    for (unsigned i = 0; i < 20000; i++)
        sum = sum * 31 + dispatch(i % 8, i);
    printf("jumptable checksum %u\n", sum);
    return 0;
}
