/* Two numbers in a constant table that read as Thumb code addresses (tests/test_numbers_in_tables.py
   computes them from a first build and builds again with them): W1, an instruction boundary in the
   middle of helper(), cuts helper short so that nothing shows it returns; W2, the middle of a
   32-bit instruction of work() right after its call of helper(). Nothing reads them as code:
   they are numbers, as a stripped program's tables of constants hold many. */
#include <stdio.h>
#include <stdlib.h>
#ifndef W1
#define W1 0x11111111u
#define W2 0x22222222u
#endif
const unsigned table[6] = {0x9f5980b0u, W1, 0xcfff0310u, W2, 0xeefd6dc3u, 0x87190265u};

__attribute__((noinline)) unsigned helper(unsigned x, const unsigned *t) {
  if (x & 1) x = x * 3 + t[0];
  for (int i = 0; i < 3; i++) x ^= (x >> 5) + t[i & 3];
  return x;
}

__attribute__((noinline)) unsigned work(unsigned n, const unsigned *t) {
  unsigned h = 2166136261u;
  for (unsigned i = 0; i < n; i++) {
    h = helper(h + i, t);
    h += (i << 4) + 0x3c0000;
    h *= 16777619u;
  }
  return h;
}

int main(int argc, char **argv) {
  unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
  printf("work %08x\n", work(n, table));
  return 0;
}
