// Calls that raise, followed by nothing but the padding before the next function, or by
// nothing at all (tests/test_x86_64_counts.py, x86-64; decision 0190). do_throw returns for
// some arguments, so a stripped program's descent takes the calls to return: raise_it's
// return site is the nop after its call, which the descent decodes as raise_it's own code;
// raise_direct's is the entry of `nothing`, a function too short for a jump. Neither site has
// room for a jump, and the copies must still push the original return addresses: the
// unwinder finds no frame for a copy's address and would stop looking for main's handler.
#include <cstdio>
#include <stdexcept>

extern "C" __attribute__((noinline)) void do_throw(int x) {
  if (x > 0) throw std::runtime_error("raised");
}

extern "C" int raise_it(int x);
extern "C" int after_raise(int x);
extern "C" int raise_direct(int x);
extern "C" void nothing(void);
extern "C" int two_more(int x);

__asm__(
    ".text\n"
    ".globl raise_it\n.type raise_it, @function\n"
    "raise_it:\n .cfi_startproc\n subq $8, %rsp\n .cfi_def_cfa_offset 16\n call do_throw\n nop\n"
    " .cfi_endproc\n.size raise_it, . - raise_it\n"
    ".globl after_raise\n.type after_raise, @function\n"
    "after_raise:\n .cfi_startproc\n leal 1(%rdi), %eax\n ret\n .cfi_endproc\n.size after_raise, . - after_raise\n"
    ".p2align 4\n"
    ".globl raise_direct\n.type raise_direct, @function\n"
    "raise_direct:\n .cfi_startproc\n subq $8, %rsp\n .cfi_def_cfa_offset 16\n call do_throw\n"
    " .cfi_endproc\n.size raise_direct, . - raise_direct\n"
    ".globl nothing\n.type nothing, @function\n"
    "nothing:\n .cfi_startproc\n ret\n .cfi_endproc\n.size nothing, . - nothing\n"
    ".globl two_more\n.type two_more, @function\n"
    "two_more:\n .cfi_startproc\n leal 2(%rdi), %eax\n ret\n .cfi_endproc\n.size two_more, . - two_more\n");

int main(int argc, char **argv) {
  int caught = 0;
  for (int i = 0; i < 3 + argc; i++) {
    try {
      raise_it(i + 1);
    } catch (const std::runtime_error &e) {
      caught += after_raise(0);
    }
    try {
      raise_direct(i + 1);
    } catch (const std::runtime_error &e) {
      nothing();
      caught += two_more(0) - 1;
    }
  }
  std::printf("caught %d\n", caught);
  return caught == 2 * (3 + argc) ? 0 : 1;
}
