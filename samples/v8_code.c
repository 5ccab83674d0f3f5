/*
 * v8_code.c - ARMv8 additions to the A32/T32 instruction sets in ordinary procedures.
 *
 * crc_words is 7-Zip's CRC-32 loop (Debian's 7zz picks it when the CPU has the CRC32
 * extension, as qemu-arm's does): CRC32W in a loop, between a PUSH and a POP of
 * callee-saved registers. step runs SB, the speculation barrier of ARMv8.5, between
 * two blocks of a procedure. Both execute like any other instruction; a decoder that
 * does not know them must not let the copy of the code before them run on into the
 * copy of the block after them (which skips the instructions in between, and in
 * crc_words leaves the stack 8 bytes lower on return).
 *
 * Prints the CRC-32 of 64 words (zlib's crc32 of their bytes) and step's results.
 */
#include <stdio.h>
#include <stdint.h>

uint32_t crc_words(uint32_t crc, const uint32_t *words, unsigned count);
int step(int x);

__asm__(".text\n"
        ".syntax unified\n"
        ".thumb\n"
        ".arch armv8.5-a\n"
        ".arch_extension crc\n"
        ".global crc_words\n"
        ".type crc_words, %function\n"
        ".thumb_func\n"
        "crc_words:\n"
        "    push {r4, r5}\n"
        "    cbz r2, 2f\n"
        "1:  ldr r4, [r1], #4\n"
        "    crc32w r0, r0, r4\n"
        "    subs r2, #1\n"
        "    bne 1b\n"
        "2:  pop {r4, r5}\n"
        "    bx lr\n"
        ".size crc_words, . - crc_words\n"
        ".global step\n"
        ".type step, %function\n"
        ".thumb_func\n"
        "step:\n"
        "    cmp r0, #0\n"
        "    beq 3f\n"
        "    adds r0, #1\n"
        "    sb\n"
        "    adds r0, #2\n"
        "3:  adds r0, #4\n"
        "    bx lr\n"
        ".size step, . - step\n");

int main(int argc, char **argv)
{
    static uint32_t words[64];
    for (unsigned i = 0; i < 64; i++)
        words[i] = i * 0x9E3779B9u + (unsigned)argc;
    (void)argv;
    printf("%08x %d %d\n", (unsigned)~crc_words(~0u, words, 64), step(argc), step(0));
    return 0;
}
