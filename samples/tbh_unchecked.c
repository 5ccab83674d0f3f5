/* A Thumb-2 switch as clang -O0 writes it: the bound checked in one register, the index
 * reloaded from its stack slot into another, the table's address made by an ADR of the
 * register the check used, and the table after a literal pool:
 *     cmp r0, #5; bhi default; ldr r1, [sp, #4]; addw r0, pc, #n; tbh [r0, r1, lsl #1]
 * No check of the jump's own index precedes it: its cases are read from the table. */
#include <stdio.h>

__attribute__((naked, noinline, target("thumb"))) int pick(int k)
{
    __asm volatile(
        "push {r4, lr}\n\t"
        "sub sp, #8\n\t"
        "str r0, [sp, #4]\n\t"
        "cmp r0, #5\n\t"
        "bhi.w 9f\n\t"
        "ldr r1, [sp, #4]\n\t"
        "adr.w r0, 1f\n\t"
        "tbh [r0, r1, lsl #1]\n"
        "2:\n\t"
        ".word 0x12345678, 0x9abcdef0, 0x0badf00d\n"   /* a literal pool between */
        "1:\n\t"
        ".hword (10f - 2b) / 2, (11f - 2b) / 2, (12f - 2b) / 2\n\t"
        ".hword (13f - 2b) / 2, (14f - 2b) / 2, (15f - 2b) / 2\n"
        "10: movs r0, #10\n\t b 8f\n"
        "11: movs r0, #21\n\t b 8f\n"
        "12: movs r0, #32\n\t b 8f\n"
        "13: movs r0, #43\n\t b 8f\n"
        "14: movs r0, #54\n\t b 8f\n"
        "15: movs r0, #65\n\t b 8f\n"
        "9: movs r0, #0\n"
        "8: add sp, #8\n\t"
        "pop {r4, pc}\n");
}

int main(void)
{
    int sum = 0;
    for (int i = 0; i < 700; i++)
        sum += pick(i % 7);
    printf("sum %d\n", sum);
    return 0;
}
