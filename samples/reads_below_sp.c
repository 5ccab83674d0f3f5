/* Code that reads the stack below SP after releasing it, as OCaml's ARM back end emits
 * every tail call from a function with a frame: `add sp, #N; ldr lr, [sp, #-4]; b callee`
 * (Debian's ocamlc.opt, decision 0108). No ABI allows it, but nothing runs between the
 * two instructions in the original. A site placed there that pushes its scratch registers
 * (a counter where d16-d31 are taken, a repeat filter's hit) overwrote the return address
 * the program was about to reload. `use_d16` touches d16, so hooks keep their scratch on
 * the stack, as in the OCaml programs (one decoded instruction naming d16 is enough). */
#include <stdio.h>

long tail_thumb(long n);
long tail_arm(long n);
long use_d16(long a, long b);

__asm__(
    "  .syntax unified\n"
    "  .text\n"
    "  .balign 4\n"
    "  .type leaf, %function\n"
    "  .thumb\n"
    "  .thumb_func\n"
    "leaf:\n"
    "  adds r0, r0, #3\n"
    "  bx lr\n"
    "  .size leaf, . - leaf\n"
    /* Thumb: a frame, a call, then the frame released and LR reloaded from under SP. */
    "  .global tail_thumb\n"
    "  .type tail_thumb, %function\n"
    "  .thumb_func\n"
    "tail_thumb:\n"
    "  sub sp, #16\n"
    "  str.w lr, [sp, #12]\n"
    "  str r0, [sp, #4]\n"
    "  bl leaf\n"
    "  ldr r1, [sp, #4]\n"
    "  adds r0, r0, r1\n"
    "  add sp, #16\n"
    "  ldr.w lr, [sp, #-4]\n"
    "  ldr.w r2, [sp, #-12]\n"  /* the argument again, from further down */
    "  adds r0, r0, r2\n"
    "  b.w leaf\n"
    "  .size tail_thumb, . - tail_thumb\n"
    /* A32: the same, and a doubleword read below SP. */
    "  .arm\n"
    "  .balign 4\n"
    "  .global tail_arm\n"
    "  .type tail_arm, %function\n"
    "tail_arm:\n"
    "  sub sp, sp, #24\n"
    "  str lr, [sp, #20]\n"
    "  str r0, [sp, #8]\n"
    "  str r0, [sp, #12]\n"
    "  blx leaf\n"
    "  add sp, sp, #24\n"
    "  ldrd r2, r3, [sp, #-16]\n"
    "  ldr lr, [sp, #-4]\n"
    "  add r0, r0, r2\n"
    "  add r0, r0, r3\n"
    "  b leaf_arm\n"
    "  .size tail_arm, . - tail_arm\n"
    "  .type leaf_arm, %function\n"
    "leaf_arm:\n"
    "  add r0, r0, #5\n"
    "  bx lr\n"
    "  .size leaf_arm, . - leaf_arm\n"
    "  .thumb\n"
    "  .balign 4\n"
    "  .global use_d16\n"
    "  .type use_d16, %function\n"
    "  .thumb_func\n"
    "use_d16:\n"
    "  .fpu vfpv3\n"
    "  vmov d16, r0, r1\n"
    "  vmov r1, r0, d16\n"
    "  subs r0, r0, r1\n"
    "  bx lr\n"
    "  .size use_d16, . - use_d16\n");

int main(void)
{
    long sum = use_d16(7, 2);
    for (long i = 0; i < 300; i++) {
        sum += tail_thumb(i);
        sum ^= tail_arm(i) << 1;
    }
    printf("sum %ld\n", sum);
    return sum % 5 == 4 ? 6 : 3;
}
