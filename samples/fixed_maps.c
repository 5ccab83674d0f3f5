/*
 * fixed_maps.c - claims address ranges of its own with mmap(MAP_FIXED), as CLISP does
 * (it reserves 0xc0000000-0xe0000000 before building its heap) and SBCL does (its spaces).
 *
 * It reserves the two places where an instrumented copy's region would go under
 * qemu-arm by default (0x80000000 for a fixed-address program, 0xc0000000 for a PIE),
 * then maps pages inside them read-write and works on them, calling functions of the
 * executable all along: a copy whose region the reservation replaced crashes at the next
 * instrumented instruction. It prints the mappings' addresses (the same as the
 * original's) and a checksum.
 */
#include <stdio.h>
#include <sys/mman.h>

#define RESERVED 0x20000000u

/* Macros, not functions: the address is a constant at each call of mmap, as in CLISP. */
#define reserve(at) mmap((void *)(at), RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
#define page_at(at) \
    (unsigned *)mmap((void *)(at), 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)

static unsigned fill(unsigned *words, unsigned seed)
{
    unsigned sum = 0;
    for (unsigned i = 0; i < 1024; i++) {
        words[i] = seed = seed * 1103515245u + 12345u;
        sum += words[i] >> (i & 7);
    }
    return sum;
}

int main(void)
{
    void *low = reserve(0x80000000ul);
    void *high = reserve(0xc0000000ul);
    unsigned *a = page_at(0x80010000ul);
    unsigned *b = page_at(0xc0010000ul);
    if (low == MAP_FAILED || high == MAP_FAILED || a == MAP_FAILED || b == MAP_FAILED) {
        puts("mmap failed");
        return 1;
    }
    unsigned sum = fill(a, 1) ^ fill(b, 2);
    printf("%p %p %p %p %08x\n", low, high, (void *)a, (void *)b, sum);
    return 0;
}
