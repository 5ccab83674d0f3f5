/* library_after_fini/late.c - liblate.so: its finaliser runs after the executable's own
 * (the dynamic linker finalises the executable first, then its libraries) and calls back
 * into the executable twice: a function the executable defines too (its definition wins,
 * as a C++ program's inline functions and template instances interpose a library's), and
 * a callback the executable registered. */
#include <stdio.h>

static unsigned (*callback)(unsigned);

__attribute__((weak)) unsigned tally(unsigned seed)
{
    return seed;
}

void late_register(unsigned (*fn)(unsigned))
{
    callback = fn;
}

__attribute__((destructor)) static void late_fini(void)
{
    unsigned value = tally(7);
    if (callback)
        value = callback(value);
    printf("late %08x\n", value);
}
