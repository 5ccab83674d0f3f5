/* A direct call whose target has a copy in the other instruction set: an A32 BL (not BLX)
 * to a place inside a Thumb function, taken when the program has two arguments. Bytes of data
 * that read as A32 code in a stripped program make such calls (a word of a literal pool
 * read as `bl` into the middle of the C library's Thumb code): the rewrite must not be
 * refused for them (tests/test_other_set_calls.py). Built with -marm. */
#include <stdio.h>

/* thumb_work(x) = x * 3 + 3, in Thumb code with a plain label (no function) inside, at a
 * word that reads in A32 as "mov r4, r0, ror r7" (the Thumb "bx lr" and the halfword after
 * it), followed by an A32 "bx lr": entered in A32 by arm_work's BL, it returns. */
__asm__(".syntax unified\n"
        ".text\n"
        ".thumb\n"
        ".global thumb_work\n"
        ".type thumb_work, %function\n"
        ".p2align 2\n"
        ".thumb_func\n"
        "thumb_work:\n"
        "    adds r0, r0, #1\n"
        "    adds r0, r0, r0, lsl #1\n"
        ".p2align 2\n"
        "thumb_inside:\n"
        "    bx lr\n"
        "    .hword 0xe1a0\n"
        "    .word 0xe12fff1e\n"
        ".arm\n");
int thumb_work(int x);

__attribute__((noipa)) int arm_work(int x)
{
    if (x == 12)  /* with two arguments */
        __asm__ volatile("bl thumb_inside" ::: "r0", "r1", "r2", "r3", "r4", "ip", "lr", "memory", "cc");
    return thumb_work(x) + 1;
}

int main(int argc, char **argv)
{
    (void)argv;
    printf("%d\n", arm_work(argc + 9));
    return 0;
}
