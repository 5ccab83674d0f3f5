/*
 * it_word.c - a number in data that reads as a Thumb code address inside an IT block.
 *
 * sub_if_above subtracts b from a only if a >= b: its SUBHS is the second instruction of an
 * IT block, whose reading with no IT before it is an unconditional SUBS. The constant
 * looks_like_code holds that instruction's address + 1, as a table of numbers in a real
 * program may (Debian's busybox: the middle of libgcc's division). A stripped copy's
 * recursive descent takes the word as a doubtful entry, decodes from there (IT-free) and
 * drops it; the procedure that holds the IT block must keep the IT's reading. The padding
 * before it keeps the descent from decoding the IT block before the word's entry.
 */
#include <stdio.h>
#include <stdlib.h>

unsigned sub_if_above(unsigned a, unsigned b);
extern const char inside_it[];

__asm__(".text\n"
        ".space 512\n" /* no stream decoded from code before reaches the IT block */
        ".syntax unified\n"
        ".thumb\n"
        ".global sub_if_above\n"
        ".type sub_if_above, %function\n"
        ".thumb_func\n"
        "sub_if_above:\n"
        "    cmp r0, r1\n"
        "    it hs\n"
        ".global inside_it\n"
        "inside_it:\n"
        "    subhs r0, r0, r1\n"
        "    bx lr\n"
        ".size sub_if_above, . - sub_if_above\n");

const char *const looks_like_code = inside_it + 1;

int main(int argc, char **argv)
{
    unsigned a = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 100;
    unsigned below = sub_if_above(3, 7), above = sub_if_above(a, 7);
    printf("%u %u %d\n", below, above, (int)((unsigned long)looks_like_code & 1));
    return below == 3 && above == a - 7 ? 0 : 1;
}
