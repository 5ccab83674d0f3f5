/* Code in two executable segments with unmapped pages between them, as node has (its
 * large-page stub in a segment of its own, 2 MiB above its .text): the function `far` is
 * in a section the linker places at its own address (the build passes
 * -Wl,--section-start=farcode=...). */
#include <stdio.h>

__attribute__((noinline, section("farcode"))) long far(long x) {
    long s = 0;
    for (long i = 0; i < x; i++) s += i ^ (x >> 1);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    long sum = 0;
    for (long k = 0; k < 200; k++) sum += far(k + argc);
    printf("%ld\n", sum);
    return 0;
}
