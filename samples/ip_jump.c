/*
 * ip_jump.c - a jump (not a call) from a procedure that loads from memory to one that
 * does not, with IP live across it.
 *
 * AAPCS lets a veneer clobber IP at a call, not at a jump inside a function: GCC keeps
 * values in IP, and a stripped program's function may be split in two where a doubtful
 * entry cuts it (busybox's malloc). cachesim copies only procedures with memory accesses:
 * load_then_add's copy jumps to add_ip, left as it was, out of branch range.
 *
 * And a call whose callee takes an operand in IP, as hand-written code may (CLISP's
 * bignum loops call a multiply helper with a digit in IP): no linker put a veneer there,
 * the helper being in reach, but in a PIE the copy of load_then_call calls add_ip from
 * out of branch range, through a veneer of Anvil's.
 */
#include <stdio.h>

int load_then_add(const int *p);
int load_then_call(const int *p);

__asm__(".text\n"
        ".syntax unified\n"
        ".thumb\n"
        ".global add_ip\n"
        ".type add_ip, %function\n"
        ".thumb_func\n"
        "add_ip:\n"
        "    add r0, r0, ip\n"
        "    bx lr\n"
        ".size add_ip, . - add_ip\n"
        ".global load_then_add\n"
        ".type load_then_add, %function\n"
        ".thumb_func\n"
        "load_then_add:\n"
        "    ldr r0, [r0]\n"
        "    mov ip, #1000\n"
        "    b add_ip\n"
        ".size load_then_add, . - load_then_add\n"
        ".global load_then_call\n"
        ".type load_then_call, %function\n"
        ".thumb_func\n"
        "load_then_call:\n"
        "    push {r4, lr}\n"
        "    ldr ip, [r0]\n"
        "    movs r0, #100\n"
        "    bl add_ip\n"
        "    ldr r4, [sp]\n"
        "    pop {r4, pc}\n"
        ".size load_then_call, . - load_then_call\n");

int main(void)
{
    static const int value = 234;
    static const int digit = 1134;
    int got = load_then_add(&value), called = load_then_call(&digit);
    printf("%d %d\n", got, called);
    return got == 1234 && called == 1234 ? 0 : 1;
}
