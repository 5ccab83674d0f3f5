// A literal pool's word that reads as a PC-relative load of a landing pad (decision 0106).
//
// stopper() calls die(), which never returns here, and the bytes after the call are data:
// a descent that does not know die() ends the program decodes them as code. The test
// writes into them a Thumb "ldr r4, [pc, #imm]" whose target is guarded()'s landing pad
// (Debian's dar_static: a pool after a call to a throwing helper did so), the rewriter
// took the pad for a literal pool and had no room for its jump.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

extern "C" __attribute__((noinline, used)) void die(int code) {
    std::fflush(stdout);
    if (code)
        std::exit(code);
}

__attribute__((noinline)) int risky(int x) {
    if (x > 100)
        throw std::runtime_error("too big");
    return x * 3 + 1;
}

extern "C" int stopper(int code);
asm(".text\n"
    ".balign 4\n"
    ".thumb\n"
    ".globl stopper\n"
    ".type stopper, %function\n"
    ".thumb_func\n"
    "stopper:\n"
    "  push {r4, lr}\n"
    "  bl die\n"
    ".globl stopper_word\n"
    "stopper_word:\n"
    "  .short 0x4c00\n"  // the test sets the offset: ldr r4, [pc, #imm] of the landing pad
    "  .short 0x4770\n"  // bx lr
    ".size stopper, . - stopper\n");

__attribute__((noinline)) int guarded(int x) {
    try {
        return risky(x);
    } catch (const std::exception &e) {
        std::printf("caught %s for %d\n", e.what(), x);
        return -1;
    }
}

int main() {
    long total = 0;
    for (int i = 0; i < 200; i += 7)
        total += guarded(i);
    std::printf("total %ld\n", total);
    return stopper(3);
}
