/*
 * one_word_functions.c - A32 functions of one instruction, right after a literal pool and
 * right before another function, reached only through pointers in data (python3.11's
 * ``main: b Py_BytesMain``): a tail call (``b real``) and an empty function (``bx lr``).
 * Built -marm -no-pie -rdynamic and stripped: ``real`` is in the dynamic symbol table,
 * ``stub`` and ``nothing`` are not.
 *
 * Prints 41.
 */
#include <stdio.h>

int prev(void), stub(int), real(int), nothing(int);

__asm__(".text\n.arm\n.align 2\n"
        ".global prev\n.type prev, %function\nprev:\n\tldr r0, =0x12345678\n\tbx lr\n\t.ltorg\n"
        ".type stub, %function\nstub:\n\tb real\n"
        ".global real\n.type real, %function\nreal:\n\tadd r0, r0, #1\n\tbx lr\n"
        ".global after\n.type after, %function\nafter:\n\tldr r0, =0x12345679\n\tbx lr\n\t.ltorg\n"
        ".type nothing, %function\nnothing:\n\tbx lr\n"
        ".global last\n.type last, %function\nlast:\n\tmov r0, #0\n\tbx lr\n");

int after(void), last(void);

int (*const table[3])(int) = {real, stub, nothing};  /* read at a computed index */
volatile int which = 1;

int main(void)
{
    int n = (prev() & 0) + (after() & 0) + last();
    for (int i = 0; i < 40; i++) {
        n = table[which](n);
        n = table[which + 1](n);
    }
    n = real(n);  /* a direct call: the descent finds real by itself */
    printf("%d\n", n);
    return 0;
}
