/* A small program whose text segment can be made to end just before the page in which
 * the next segment starts: PAD bytes of read-only data (which GNU ld's default layout for
 * ARM keeps in the text segment, after the code) push its end there. Its procedures are
 * small, so none of them holds Anvil's loader stub whole either (tests/test_loader_stub.py). */
#include <stdio.h>
#include <stdlib.h>

#ifndef PAD
#define PAD 1
#endif
static const char pad[PAD] = {7};
static unsigned compared;  /* a global, whose address is printed */

__attribute__((noinline)) static unsigned mix(unsigned h, unsigned v) { return (h ^ v) * 16777619u; }

__attribute__((noinline)) static unsigned fold(const char *s) {
    unsigned h = 2166136261u;
    while (*s)
        h = mix(h, (unsigned char)*s++);
    return h;
}

__attribute__((noinline)) static int compare(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    compared++;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    unsigned keys[8];
    for (int i = 0; i < 8; i++)
        keys[i] = fold(argc > 1 ? argv[1] : "anvil") + (unsigned)i * fold("step");
    qsort(keys, 8, sizeof keys[0], compare);
    for (int i = 0; i < 8; i++)
        printf("%08x\n", keys[i]);
    /* the padding is read through a volatile pointer, so it stays whole (in .rodata); a
     * global's, a heap block's and a local's addresses */
    const volatile char *padding = pad;
    char *heap = malloc(16);
    printf("pad %d, compared %u, global %p, heap %p, stack %p\n", padding[0] + padding[PAD - 1], compared,
           (void *)&compared, (void *)heap, (void *)&heap);
    free(heap);
    return 0;
}
