/* A literal pool that a stripped program's descent reads as code (tests/test_pools_read_as_code.py,
   decisions 0189 and 0191). bt_literal calls bt_raise, which returns for some arguments and aborts
   for this one, and the bytes after that call are a literal pool whose word reads as a Thumb
   "bgt.n" to the middle of bt_next's tail call (B.W), whose second halfword reads as
   "ittet gt": read so, bt_after (right after bt_next) would run conditionally, and its copy
   crashes where a caller enters it with the flags making GT false.

   Built two ways:
   - by default, bt_literal loads the literal past another call (bt_identity's) than the one
     the pool follows, and no function has a row in the unwind index: only the load tells the
     pool from code (decision 0191);
   - with -DINDEXED, every function has a row (.fnstart/.fnend) and the pool comes before its
     load, which reaches back to it: only the index tells (decision 0189). */
#include <stdio.h>
#include <stdlib.h>

#ifdef INDEXED
#define FN_START(unwind) " .fnstart\n " unwind "\n"
#define FN_END " .fnend\n"
#define LITERAL_FUNCTION                                                                    \
  "bt_literal:\n" FN_START(".save {r4, lr}") " push {r4, lr}\n cbnz r0, 2f\n bl bt_raise\n" \
  " .balign 4\n"                                                                            \
  "3:\n .hword 0xdc00 + (bt_next + 4 - (3b + 4)) / 2, 0\n"                                  \
  "2:\n bl bt_identity\n ldr.w r0, 3b\n pop {r4, pc}\n" FN_END
#else
#define FN_START(unwind) ""
#define FN_END ""
#define LITERAL_FUNCTION                                                                      \
  "bt_literal:\n push {r4, lr}\n cbz r0, 2f\n bl bt_identity\n ldr r0, 3f\n pop {r4, pc}\n" \
  "2:\n bl bt_raise\n .balign 4\n"                                                            \
  "3:\n .hword 0xdc00 + (bt_next + 4 - (3b + 4)) / 2, 0\n"
#endif

unsigned bt_literal(unsigned x);
unsigned bt_next(unsigned x, const unsigned *pair);
unsigned bt_call_after(unsigned x);
unsigned bt_identity(unsigned x) __attribute__((noinline));
unsigned bt_identity(unsigned x) { return x; }

__asm__(
    ".syntax unified\n.thumb\n"
    ".section .text.pools_read_as_code,\"ax\",%progbits\n"
    ".balign 4\n"
    ".type bt_target, %function\n.thumb_func\n"
    "bt_target:\n" FN_START(".cantunwind") " adds r0, r0, r2\n bx lr\n" FN_END
    ".size bt_target, . - bt_target\n"
    ".type bt_raise, %function\n.thumb_func\n"
    "bt_raise:\n" FN_START(".save {r4, lr}") " push {r4, lr}\n cbz r0, 1f\n pop {r4, pc}\n"
    "1:\n bl abort\n" FN_END ".size bt_raise, . - bt_raise\n"
    ".global bt_literal\n.type bt_literal, %function\n.thumb_func\n"
    LITERAL_FUNCTION ".size bt_literal, . - bt_literal\n"
    /* bt_next + 2 is bt_target + 0x72: the B.W below is 0xf7ff 0xbfc5 */
    ".org 0x70\n"
    ".global bt_next\n.type bt_next, %function\n.thumb_func\n"
    "bt_next:\n" FN_START(".cantunwind") " ldm r1, {r1, r2}\n b.w bt_target\n nop\n" FN_END
    ".size bt_next, . - bt_next\n"
    ".type bt_after, %function\n.thumb_func\n"
    "bt_after:\n" FN_START(".save {lr}") " push {lr}\n sub sp, #8\n str r0, [sp]\n ldr r0, [sp]\n"
    " adds r0, #1\n add sp, #8\n pop {pc}\n" FN_END ".size bt_after, . - bt_after\n"
    ".global bt_call_after\n.type bt_call_after, %function\n.thumb_func\n"
    "bt_call_after:\n" FN_START(".save {r4, lr}") " push {r4, lr}\n cmp r0, r0\n bl bt_after\n pop {r4, pc}\n"
    FN_END ".size bt_call_after, . - bt_call_after\n"
    ".text\n");

int main(int argc, char **argv) {
  unsigned pair[2] = {5, (unsigned)argc + 6};
  printf("literal %#x next %u after %u\n", bt_literal(1), bt_next(3, pair), bt_call_after(41));
  return 0;
}
