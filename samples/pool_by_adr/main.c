/*
 * Reads a constant from a literal pool after a call that never returns (lookup.S). The
 * program names backtrace, so it gets original return addresses: a jump written at the
 * call's "return site" would change the constant. Prints "e8287c01 00000017".
 */
#include <execinfo.h>
#include <stdio.h>
#include <threads.h>

/* Never returns, through an import no list of names knows (GNAT's
   system__assertions__raise_assert_failure is so). */
__attribute__((noreturn, noinline)) void fail(int code)
{
    printf("fail %d\n", code);
    thrd_exit(code);
}

int init_entry(unsigned *dst, int flag);

int main(int argc, char **argv)
{
    (void)argv;
    unsigned v[2];
    if (argc > 5) {
        void *frames[4];
        backtrace(frames, 4);
    }
    init_entry(v, argc > 2 ? argc : 0);
    printf("%08x %08x\n", v[0], v[1]);
    return 0;
}
