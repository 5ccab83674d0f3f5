/*
 * x64_before_entry.c - code of the program's own that runs before its entry.
 *
 * The dynamic linker calls the program's preinit functions (clang's UBSan, SafeStack and
 * ASan runtimes put theirs there) and then the libraries' initialisers, before the
 * program's entry; built with -pg, libm's _init calls the program's __gmon_start__ too.
 * Built with -DPAD=n, a function of n bytes of nops moves the end of the text segment
 * (a test puts it at a page's end, where the loader stub cannot follow the text).
 *
 * Prints what the preinit function summed and a value from libm; exits 0 when the preinit
 * function ran once, before main.
 */
#include <math.h>
#include <stdio.h>

#ifndef PAD
#define PAD 16
#endif
#define STRING(x) #x
#define TEXT(x) STRING(x)

static volatile long before_main;
static int calls;

static void early(int argc, char **argv, char **envp)
{
    (void)argv;
    (void)envp;
    calls++;
    for (int i = 0; i < 1000; i++)
        before_main += i * argc;
}

__attribute__((section(".preinit_array"), used))
static void (*const preinit[])(int, char **, char **) = {early};

__attribute__((used, noinline)) void filler(void)
{
    __asm__ volatile(".fill " TEXT(PAD) ", 1, 0x90" ::: "memory");
}

int main(int argc, char **argv)
{
    (void)argv;
    printf("before main: %ld in %d call(s)\n", before_main, calls);
    printf("%.3f\n", sqrt((double)argc + 1.0) + cbrt(argc * 7.0));
    return calls == 1 ? 0 : 1;
}
