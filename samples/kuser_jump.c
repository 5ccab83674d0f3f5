/*
 * kuser_jump.c - jumps to the kernel's user helpers through literals, in a PIE.
 *
 * Linux maps helpers at fixed addresses at the top of every ARM process (__kuser_cmpxchg
 * at 0xffff0fc0, __kuser_get_tls at 0xffff0fe0). Go's runtime jumps to them with
 * ``ldr pc, [pc]`` and the address in a literal (its atomics on ARMv6, its thread
 * pointer). In a position-independent executable such a literal has no relocation: it is
 * an absolute address, which a copy must not move with the image (decision 0090). Both
 * instruction sets, tail jumps (the helper returns to the caller's caller).
 */
#include <stdio.h>

int cas_arm(int oldval, int newval, volatile int *ptr);  /* 0 when *ptr was oldval and is now newval */
int cas_thumb(int oldval, int newval, volatile int *ptr);
void *tls_arm(void);
void *tls_thumb(void);

__asm__(".text\n"
        ".syntax unified\n"
        ".arm\n"
        ".global cas_arm\n"
        ".type cas_arm, %function\n"
        "cas_arm:\n"
        "    ldr pc, 1f\n"
        "    b .\n"
        "1:  .word 0xffff0fc0\n"
        ".size cas_arm, . - cas_arm\n"
        ".global tls_arm\n"
        ".type tls_arm, %function\n"
        "tls_arm:\n"
        "    ldr pc, 1f\n"
        "    b .\n"
        "1:  .word 0xffff0fe0\n"
        ".size tls_arm, . - tls_arm\n"
        ".thumb\n"
        ".global cas_thumb\n"
        ".type cas_thumb, %function\n"
        ".thumb_func\n"
        ".balign 4\n"
        "cas_thumb:\n"
        "    ldr.w pc, 1f\n"
        "    .balign 4\n"
        "1:  .word 0xffff0fc0\n"
        ".size cas_thumb, . - cas_thumb\n"
        ".global tls_thumb\n"
        ".type tls_thumb, %function\n"
        ".thumb_func\n"
        ".balign 4\n"
        "tls_thumb:\n"
        "    ldr.w pc, 1f\n"
        "    .balign 4\n"
        "1:  .word 0xffff0fe0\n"
        ".size tls_thumb, . - tls_thumb\n");

static void add(volatile int *counter, int n, int (*cas)(int, int, volatile int *))
{
    for (int i = 0; i < n; i++) {
        int old;
        do
            old = *counter;
        while (cas(old, old + 1 + (i & 3), counter) != 0);
    }
}

int main(void)
{
    static volatile int counter;
    add(&counter, 1000, cas_arm);
    add(&counter, 700, cas_thumb);
    void *tp = __builtin_thread_pointer();
    int same = tls_arm() == tp && tls_thumb() == tp;
    printf("%d %d\n", counter, same);
    return counter == 4250 && same ? 0 : 1;
}
