// A call that raises, followed by nothing but the padding before the next function
// (tests/test_x86_64_raise_past_padding.py, x86-64). do_throw returns for some arguments,
// so a stripped program's descent takes raise_it's call to return and decodes the nop after
// it as raise_it's own code: a return site with no room for a jump. Its copy must still
// push the original return address: the unwinder finds no frame for a copy's address and
// would stop looking for main's handler there.
#include <cstdio>
#include <stdexcept>

extern "C" __attribute__((noinline)) void do_throw(int x) {
  if (x > 0) throw std::runtime_error("raised");
}

extern "C" int raise_it(int x);
extern "C" int after_raise(int x);

__asm__(
    ".text\n"
    ".globl raise_it\n.type raise_it, @function\n"
    "raise_it:\n .cfi_startproc\n subq $8, %rsp\n .cfi_def_cfa_offset 16\n call do_throw\n nop\n"
    " .cfi_endproc\n.size raise_it, . - raise_it\n"
    ".globl after_raise\n.type after_raise, @function\n"
    "after_raise:\n .cfi_startproc\n leal 1(%rdi), %eax\n ret\n .cfi_endproc\n.size after_raise, . - after_raise\n");

int main(int argc, char **argv) {
  int caught = 0;
  for (int i = 0; i < 3 + argc; i++) {
    try {
      raise_it(i + 1);
    } catch (const std::runtime_error &e) {
      caught += after_raise(0);
    }
  }
  std::printf("caught %d\n", caught);
  return caught == 3 + argc ? 0 : 1;
}
