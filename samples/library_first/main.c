/* A program its library calls into before the program's own entry has run
 * (tests/test_library_calls_first.py): libfirst.so's constructor (first.c) calls
 * program_callback, which the program exports, while the dynamic linker initialises the
 * libraries: as D's Phobos does with the template instances a program exports, or a C
 * library with a program's own malloc. */
#include <stdio.h>

int lib_value(void);

static int calls;

int program_callback(int x)
{
    calls++;
    return x * 2 + 1;
}

int main(void)
{
    printf("the library got %d; the callback ran %d time(s) before main\n", lib_value(), calls);
    return 0;
}
