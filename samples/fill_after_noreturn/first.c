/* first.c, second.c - a function that ends in a call of one that never returns as it is
 * called but has a path that does (fail: declared noreturn, an alias of fail_or_return,
 * whose other path returns), then ld.lld's fill (0xd4d4d4d4) up to the next object's
 * first function, which only a table of pointers reaches (steps, in second.c). Stripped,
 * the reading past the call ran on through the fill into that function, which then got
 * no jump of its own and ran uncounted. */
#include <setjmp.h>
#include <stdio.h>

extern int (*const steps[])(int);
extern const int step_count;
jmp_buf on_error;

__attribute__((noinline)) void fail_or_return(int code)
{
    if (code > 0)
        longjmp(on_error, code);
}

void fail(int code) __attribute__((noreturn, alias("fail_or_return")));

int check(int value);

int main(int argc, char **argv)
{
    (void)argv;
    static volatile int total;
    total = argc;
    if (setjmp(on_error) == 0) {
        for (int round = 0; round < 2000; round++)
            total = check(steps[round % step_count](total + round) & 0x3ff);
        total = check(5000);
    }
    printf("total %d\n", total);
    return 0;
}

/* Last in this object: its cold path, the call of fail, ends it. */
__attribute__((noinline)) int check(int value)
{
    if (value > 1200)
        fail(value);
    return value * 3 + 1;
}
