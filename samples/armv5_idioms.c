/*
 * armv5_idioms.c - A32 code as compilers for ARMv4T/ARMv5 write it (Debian's armel port).
 *
 * - Calls linked by ``mov lr, pc`` before a jump through a register (ARMv4T has no BLX
 *   register form): ``mov lr, pc; bx r1``.
 * - glibc's armel atomics call the kernel's __kuser_cmpxchg at 0xffff0fc0 so:
 *   ``mvn r3, #0xf000; mov lr, pc; sub pc, r3, #63``; here in a procedure that also has a
 *   computed jump (``mov pc, ip``), where every instruction is a block of its own, so the
 *   call starts the block after its ``mov lr, pc``.
 * - A switch of 300 cases (GCC's ``addls pc, pc, rI, lsl #2`` and a row of branches)
 *   whose bound is a literal, as there is no MOVW before ARMv6T2.
 * - The same switch in a loop whose bound GCC loaded into a callee-saved register once,
 *   before the loop, a call away from its ``cmp`` (Debian's armel diff and perl); the code
 *   after its row begins with a branch.
 *
 * Exits 0 when every result is the one expected.
 */
#include <stdio.h>

int call_linked(int (*fn)(int), int x);          /* fn(x) + 1, fn called by mov lr, pc; bx */
int cas_linked(int oldval, int newval, volatile int *ptr);  /* 0 when *ptr was oldval */
int pick(unsigned i);                            /* i % 3 + 1 for i < 300, else 0 */
int pick_loop(unsigned n);                       /* the sum of pick(scramble(i)) for i < n */

unsigned scramble(unsigned i) __attribute__((noinline));
unsigned scramble(unsigned i)
{
    return i * 7 % 320;
}

__asm__(".text\n"
        ".syntax unified\n"
        ".arm\n"
        ".global call_linked\n"
        ".type call_linked, %function\n"
        "call_linked:\n"
        "    push {r4, lr}\n"
        "    mov r4, r0\n"
        "    mov r0, r1\n"
        "    mov lr, pc\n"
        "    bx r4\n"
        "    add r0, r0, #1\n"
        "    pop {r4, pc}\n"
        ".size call_linked, . - call_linked\n"
        ".global cas_linked\n"
        ".type cas_linked, %function\n"
        "cas_linked:\n"
        "    push {r4, lr}\n"
        "    adr ip, 1f\n"
        "    mov pc, ip\n"
        "1:  mvn r3, #0xf000\n"
        "    mov lr, pc\n"
        "    sub pc, r3, #63\n"
        "    movcc r0, #1\n"
        "    movcs r0, #0\n"
        "    pop {r4, pc}\n"
        ".size cas_linked, . - cas_linked\n"
        ".global pick\n"
        ".type pick, %function\n"
        "pick:\n"
        "    ldr r3, 3f\n"
        "    cmp r0, r3\n"
        "    addls pc, pc, r0, lsl #2\n"
        "    b 9f\n"
        "    .rept 100\n"
        "    b 4f\n"
        "    b 5f\n"
        "    b 6f\n"
        "    .endr\n"
        "4:  mov r0, #1\n"
        "    bx lr\n"
        "5:  mov r0, #2\n"
        "    bx lr\n"
        "6:  mov r0, #3\n"
        "    bx lr\n"
        "9:  mov r0, #0\n"
        "    bx lr\n"
        "3:  .word 299\n"
        ".size pick, . - pick\n"
        ".global pick_loop\n"
        ".type pick_loop, %function\n"
        "pick_loop:\n"
        "    push {r4, r5, r6, lr}\n"
        "    ldr r5, 3f\n"
        "    mov r4, r0\n"
        "    mov r6, #0\n"
        "1:  subs r4, r4, #1\n"
        "    bmi 8f\n"
        "    mov r0, r4\n"
        "    bl scramble\n"
        "    cmp r0, r5\n"
        "    addls pc, pc, r0, lsl #2\n"
        "    b 2f\n"
        "    .rept 100\n"
        "    b 4f\n"
        "    b 5f\n"
        "    b 6f\n"
        "    .endr\n"
        "2:  b 1b\n"
        "4:  add r6, r6, #1\n"
        "    b 1b\n"
        "5:  add r6, r6, #2\n"
        "    b 1b\n"
        "6:  add r6, r6, #3\n"
        "    b 1b\n"
        "8:  mov r0, r6\n"
        "    pop {r4, r5, r6, pc}\n"
        "3:  .word 299\n"
        ".size pick_loop, . - pick_loop\n");

static int twice(int x)
{
    return 2 * x;
}

int main(int argc, char **argv)
{
    (void)argv;
    int sum = 0;
    for (int i = 0; i < 50; i++)
        sum += call_linked(twice, i + argc);
    static volatile int counter;
    for (int i = 0; i < 300; i++) {
        int old;
        do
            old = counter;
        while (cas_linked(old, old + 1 + (i & 1), &counter) != 0);
    }
    int picks = 0;
    for (unsigned i = 0; i < 320; i++)
        picks += pick(i * 7 % 320);
    int looped = pick_loop(320);
    printf("%d %d %d %d\n", sum, counter, picks, looped);
    return sum == 2600 && counter == 450 && picks == 600 && looped == 600 ? 0 : 1;
}
