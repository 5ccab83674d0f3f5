/*
 * preinit.c - a function of the program's own in .preinit_array.
 *
 * The dynamic linker calls a dynamic program's preinit functions before any library's
 * initialiser and before the program's entry (ASan's __asan_init is one: with -no-pie it
 * is called through the program's PLT entry). They run in the program's code, before its
 * start. Exits 0 when each ran once, in order, with the program's arguments, before main.
 */
#include <stdio.h>
#include <string.h>

static int order[4], calls;

static void first(int argc, char **argv, char **envp)
{
    (void)envp;
    order[calls++] = argc * 10 + (int)strlen(argv[0]);
}

static void second(int argc, char **argv, char **envp)
{
    (void)argv;
    (void)envp;
    order[calls++] = -argc;
}

__attribute__((section(".preinit_array"), used))
static void (*const preinit[])(int, char **, char **) = {first, second};

int main(int argc, char **argv)
{
    printf("%d calls: %d %d\n", calls, order[0], order[1]);
    return calls == 2 && order[0] == argc * 10 + (int)strlen(argv[0]) && order[1] == -argc ? 0 : 1;
}
