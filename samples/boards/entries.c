/*
 * entries.c - functions called through a table in flash whose entries leave less room
 * than a 4-byte branch: twist, whose second instruction (2 bytes in) a constant in
 * .rodata names as a Thumb code address (as a library's constant may by chance), and
 * nothing, a function of one 2-byte instruction. A rewriter must not write over twist's
 * second instruction (a code pointer may lead there), nor leave either entry as it was:
 * calls through the table would then run the original code, uncounted.
 *
 * Each round calls every function of the table and mixes the results; twist is called
 * directly too. Prints "rounds=<n> x=<hex> near=<0|1>". Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define ROUNDS 200u

/* In assembly, so that the instructions are exactly these, each 2 bytes (a compiler might
 * start with a 4-byte one, or pad after one), with nothing right before twist: its room
 * ends where twist begins. twist: r0 = r0 * 3 + 7, rotated. */
uint32_t nothing(uint32_t x);
uint32_t twist(uint32_t x);
__asm__(".text\n\t"
        ".syntax unified\n\t"
        ".thumb\n\t"
        ".balign 4\n\t"
        ".global nothing\n\t"
        ".type nothing, %function\n\t"
        ".thumb_func\n"
        "nothing:\n\t"
        "bx lr\n\t"
        ".size nothing, . - nothing\n\t"
        ".global twist\n\t"
        ".type twist, %function\n\t"
        ".thumb_func\n"
        "twist:\n\t"
        "movs r1, #3\n\t"
        "muls r0, r1\n\t"
        "adds r0, #7\n\t"
        "movs r1, #27\n\t"
        "rors r0, r1\n\t"
        "bx lr\n\t"
        ".size twist, . - twist\n");

__attribute__((noinline)) static uint32_t scramble(uint32_t x)
{
    for (uint32_t k = 0; k < 5; k++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    return x;
}

__attribute__((noinline)) static uint32_t fold(uint32_t x)
{
    return (x >> 16) ^ (x & 0xFFFFu) ^ (x % 251u);
}

typedef uint32_t (*step_fn)(uint32_t);

static step_fn const steps[] = {scramble, twist, nothing, fold};

/* The address of twist's second instruction, with the Thumb bit: a number that reads as
 * a code pointer. It is only compared, never called. */
__attribute__((used)) static const uintptr_t near_twist = (uintptr_t)twist + 2u;

int main(void)
{
    uint32_t x = 0x12345678u;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        for (uint32_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
            x = steps[k](x + round);
        }
        x = twist(x);
    }
    volatile uintptr_t near = near_twist;
    printf("rounds=%" PRIu32 " x=%08" PRIx32 " near=%d\n", ROUNDS, x, near == (uintptr_t)twist + 2u);
    return 0;
}
