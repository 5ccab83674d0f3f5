/*
 * ip_call.c - a call whose callee takes an operand in IP, as hand-written code may:
 * CLISP's bignum loops (ariarm.S) load a digit into IP and call a multiply helper that
 * reads it there.
 *
 * AAPCS lets a call's veneer clobber IP, but no linker put a veneer here: the helper is
 * in reach. cachesim copies only procedures with memory accesses, so in a PIE the copy
 * of load_then_call calls add_ip, left as it was, from out of branch range.
 */
#include <stdio.h>

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
    static const int value = 1134;
    int got = load_then_call(&value);
    printf("%d\n", got);
    return got == 1234 ? 0 : 1;
}
