/*
 * narrow_entries.c - an entry with room for a 2-byte B.N only, whose trampoline has to
 * come from a procedure that a code pointer enters in the middle (decision 0081):
 * - nothing, one 2-byte Thumb instruction called through a table, gets a B.N to a
 *   trampoline within 2 KiB;
 * - around it, 2.5 KiB of data on either side, so that the only relocated code within
 *   that reach is mix, whose second half a word in data names (mix_tail, a Thumb code
 *   address: a label, or a number that reads as one). Code may enter mix there and run
 *   on in place to its return, but nothing reaches mix's first half but its entry, whose
 *   jump goes to the copy: those bytes never run in place.
 * - lone, alone between 2.5 KiB of data on either side and called through the table,
 *   whose second instruction the first word of a column of offsets names (three numbers
 *   in small ascending steps, one even): numbers, which must not cut lone's room to the
 *   2 bytes a B.N needs (no trampoline room is in its reach).
 * Prints a checksum of 40 rounds; exit status 0.
 */
#include <stdint.h>
#include <stdio.h>

uint32_t nothing(uint32_t x);
uint32_t mix(uint32_t x);
uint32_t lone(uint32_t x);

__asm__(".text\n\t"
        ".syntax unified\n\t"
        ".thumb\n\t"
        ".balign 4\n"
        "narrow_before:\n\t"
        ".rept 640\n\t"  /* 2.5 KiB of data: no code, no cave */
        ".word 0x5a5a5a5a\n\t"
        ".endr\n\t"
        ".global nothing\n\t"
        ".type nothing, %function\n\t"
        ".thumb_func\n"
        "nothing:\n\t"
        "bx lr\n\t"
        ".size nothing, . - nothing\n\t"  /* mix right after it: nothing has 2 bytes of room */
        ".global mix\n\t"
        ".type mix, %function\n\t"
        ".thumb_func\n"
        "mix:\n\t"
        "push {r4, r5, lr}\n\t"
        "movs r4, #5\n\t"
        "adds r0, r0, r4\n\t"
        "lsls r5, r0, #3\n\t"
        "eors r0, r0, r5\n\t"
        "lsrs r5, r0, #7\n\t"
        "eors r0, r0, r5\n\t"
        "adds r0, r0, #11\n\t"
        "lsls r5, r0, #9\n\t"
        "eors r0, r0, r5\n\t"
        "lsrs r5, r0, #5\n\t"
        "eors r0, r0, r5\n\t"
        "adds r0, r0, #17\n\t"
        "lsls r5, r0, #2\n\t"
        "adds r0, r0, r5\n"
        "mix_second_half:\n\t"  /* offset 30: what mix_tail names */
        "lsrs r5, r0, #13\n\t"
        "eors r0, r0, r5\n\t"
        "subs r4, r4, #1\n\t"
        "bne mix_second_half\n\t"
        "pop {r4, r5, pc}\n\t"
        ".size mix, . - mix\n\t"
        ".balign 4\n\t"
        ".rept 640\n\t"
        ".word 0xa5a5a5a5\n\t"
        ".endr\n\t"
        ".global lone\n\t"
        ".type lone, %function\n\t"
        ".thumb_func\n"
        "lone:\n\t"
        "push {r4, lr}\n\t"  /* lone + 2: what the first of offsets names */
        "movs r4, #9\n\t"
        "muls r0, r4\n\t"
        "adds r0, #1\n\t"
        "movs r4, #19\n\t"
        "rors r0, r4\n\t"
        "pop {r4, pc}\n\t"
        ".size lone, . - lone\n\t"
        ".balign 4\n\t"
        ".rept 640\n\t"
        ".word 0x3c3c3c3c\n\t"
        ".endr\n\t");

typedef uint32_t (*step_fn)(uint32_t);

static step_fn const volatile steps[] = {nothing, mix, lone};

/* A column of numbers running through lone's addresses in small steps, one of them even:
 * offsets, not code addresses (two functions in different instruction sets are never
 * that close), though the first reads as a Thumb pointer to lone + 2. */
__attribute__((used)) static const uintptr_t volatile offsets[] = {
    (uintptr_t)lone + 2u, (uintptr_t)lone + 7u, (uintptr_t)lone + 12u,
};

/* mix's second half, with the Thumb bit: only compared, never called. */
__attribute__((used)) static const uintptr_t volatile mix_tail = (uintptr_t)mix + 30u;

int main(void)
{
    uint32_t x = 0x9e3779b9u;
    for (uint32_t round = 0; round < 40; round++) {
        for (uint32_t k = 0; k < 3; k++)
            x = steps[k](x + round);
        x = mix(x);
    }
    printf("%08x %d\n", (unsigned)x, mix_tail == (uintptr_t)mix + 30u && offsets[2] - offsets[0] == 10u);
    return 0;
}
