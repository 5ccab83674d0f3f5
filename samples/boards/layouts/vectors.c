/*
 * vectors.c - a vector table for programs started by newlib's rdimon-crt0
 * (--specs=rdimon.specs without -nostartfiles): the reset vector is crt0's _start,
 * which asks the debugger or emulator for the heap and stack through the
 * semihosting SYS_HEAPINFO call, moves the stack pointer to the stack base it is
 * given (QEMU: the top of the largest free RAM; "__stack" when given 0), zeroes
 * .bss, opens the console and calls main.  crt0 does not copy .data: the linker
 * script (newlib.ld) loads it straight into RAM.
 *
 * Entry 0, the stack pointer the core starts with, is "__stack" (top of the SRAM
 * bank); every exception but reset spins.
 */
typedef void (*vector_fn)(void);

extern char __stack;
extern void _start(void);

static void spin(void)
{
    for (;;) {
    }
}

__attribute__((section(".vectors"), used))
const vector_fn vector_table[16] = {
    (vector_fn)&__stack, _start, spin, spin, spin, spin, spin, 0, 0, 0, 0, spin, spin, 0, spin, spin,
};
