/*
 * library_after_fini/main.c - a program whose code runs after its own finalisers: at exit
 * liblate.so's finaliser calls tally (the executable's definition interposes the
 * library's) and stir (registered as a callback), after the executable's DT_FINI and
 * DT_FINI_ARRAY functions have run. ceph's programs run so, their libraries' static
 * objects destroyed by the executable's copies of shared C++ destructors.
 */
#include <stdio.h>

void late_register(unsigned (*fn)(unsigned));

unsigned tally(unsigned seed)
{
    for (int i = 0; i < 1000; i++)
        seed = seed * 1103515245u + 12345u + (unsigned)i;
    return seed;
}

static unsigned stir(unsigned value)
{
    for (int i = 0; i < 500; i++)
        value ^= value << 7 ^ value >> 3 ^ (unsigned)i;
    return value;
}

__attribute__((destructor)) static void own_fini(void)
{
    printf("own finaliser %08x\n", tally(1));
}

int main(int argc, char **argv)
{
    (void)argv;
    late_register(stir);
    printf("main %08x\n", tally((unsigned)argc));
    return 0;
}
