/* Mapping symbols of a section that is not loaded: gcc -g -fno-dwarf2-cfi-asm writes
 * .debug_frame with data directives, so each object's part of it starts with a $d whose
 * value is an offset in .debug_frame, and such an offset may equal an address in .text.
 * Here a section of no flags holds a code/data mark every 8 bytes over the addresses of a
 * fixed-address program's text, as that coincidence would everywhere. */
#include <stdio.h>

__asm__(".pushsection .marks_elsewhere, \"\", %progbits\n"
        ".space 0x10000\n"
        ".rept 4096\n nop\n .word 0\n .endr\n"
        ".popsection\n");

__attribute__((noinline)) static int step(int x) { return (x * 7) ^ (x >> 3); }

int main(void)
{
    int s = 0;
    for (int i = 0; i < 1000; i++)
        s += step(i);
    printf("%d\n", s);
    return 0;
}
