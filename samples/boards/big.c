/*
 * big.c - a large image: 2048 small distinct functions (more than 64 KiB of code in
 * all, well past what one 16-bit offset or a short branch reaches), called one after
 * the other through a table in flash.
 *
 * Each function f<n> (n an octal literal: the names are made by pasting digits)
 * mixes its argument with n and branches on the result; a switch of four cases
 * makes some of them use a jump table.
 *
 * Prints "functions=<count> x=<hex>". Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define FUNCTION(n)                                                        \
    __attribute__((noinline)) uint32_t f##n(uint32_t x)                  \
    {                                                                      \
        x = x * (2u * (n) + 1u) + (n);                                     \
        x ^= x >> ((n) % 13u + 3u);                                        \
        if (x & (1u << ((n) % 31u)))                                       \
            x += (n) * 7u;                                                 \
        else                                                               \
            x -= (n);                                                      \
        switch ((x >> 3) & 3u) {                                           \
        case 0: return x + 1u;                                             \
        case 1: return x * 3u;                                             \
        case 2: return x ^ 0x5A5Au;                                        \
        default: return x - (n) * 5u;                                      \
        }                                                                  \
    }
#define ENTRY(n) f##n,

/* The functions and the table's entries, 4 * 8 * 8 * 8 = 2048 of each: each level pastes one
 * more octal digit onto the prefix (one macro per level: a macro cannot expand inside itself). */
#define A8(m, p) m(p##0) m(p##1) m(p##2) m(p##3) m(p##4) m(p##5) m(p##6) m(p##7)
#define B8(m, p) A8(m, p##0) A8(m, p##1) A8(m, p##2) A8(m, p##3) A8(m, p##4) A8(m, p##5) A8(m, p##6) A8(m, p##7)
#define C8(m, p) B8(m, p##0) B8(m, p##1) B8(m, p##2) B8(m, p##3) B8(m, p##4) B8(m, p##5) B8(m, p##6) B8(m, p##7)
#define ALL(m) C8(m, 00) C8(m, 01) C8(m, 02) C8(m, 03)

ALL(FUNCTION)

typedef uint32_t (*function)(uint32_t);
static function const table[] = {ALL(ENTRY)};

int main(void)
{
    uint32_t x = 1u;
    for (uint32_t round = 0; round < 3u; round++)
        for (uint32_t i = 0; i < sizeof table / sizeof table[0]; i++)
            x = table[i](x + i);
    printf("functions=%u x=%08" PRIx32 "\n", (unsigned)(sizeof table / sizeof table[0]), x);
    return 0;
}
