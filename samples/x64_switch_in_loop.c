/* A switch in a loop: with -mcmodel=large gcc loads the jump table's address once, before
 * the loop (lea tab(%rip), %r13), and jumps with mov (%r13,%rax,8), %rcx; add %r13, %rcx;
 * jmp *%rcx: a table of 64-bit offsets read whole, then the table's address added. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long run(const unsigned char *p, long n)
{
    long acc = 0;
    for (long i = 0; i < n; i++) {
        switch (p[i] % 12) {
        case 0: acc += 3; break;
        case 1: acc ^= i; break;
        case 2: acc -= 7; break;
        case 3: acc *= 3; break;
        case 4: acc += i * 2; break;
        case 5: acc >>= 1; break;
        case 6: acc |= 0x40; break;
        case 7: acc += p[i]; break;
        case 8: acc -= i; break;
        case 9: acc &= 0xffffff; break;
        case 10: acc += 11; break;
        default: acc = ~acc; break;
        }
    }
    return acc;
}

int main(void)
{
    long n = 20000;
    unsigned char *p = malloc(n);
    for (long i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 2654435761u >> 13);
    printf("%ld\n", run(p, n));
    free(p);
    return 0;
}
