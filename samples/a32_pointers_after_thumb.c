/*
 * a32_pointers_after_thumb.c - A32 functions that only a table of pointers names, placed
 * right after Thumb code (decision 0104).
 *
 * Built -marm as a PIE, the program's functions follow the C runtime's Thumb start-up code
 * (frame_dummy). The shape operations are static and reached only through the table,
 * whose words the dynamic loader relocates: even addresses (A32), which the descent had
 * read as computed-goto labels of the Thumb procedure before them, decoding the A32
 * functions as Thumb. Rust's armv7 programs are laid out the same way (std's start-up
 * closures right after frame_dummy), and most of their code ran uncounted.
 */
#include <stdio.h>
#include <string.h>

struct shape_ops {
    const char *name;
    long (*area)(long);
    long (*perimeter)(long);
    void (*describe)(char *, long);
};

__attribute__((noinline)) static long sq_area(long s) { long a = 0; for (long i = 0; i < s; i++) a += s; return a; }
__attribute__((noinline)) static long sq_perimeter(long s) { return 4 * s; }
__attribute__((noinline)) static void sq_describe(char *out, long s) { sprintf(out, "square %ld", s); }
__attribute__((noinline)) static long tri_area(long s) { long a = 0; for (long i = 0; i < s; i += 2) a += s; return a; }
__attribute__((noinline)) static long tri_perimeter(long s) { return 3 * s; }
__attribute__((noinline)) static void tri_describe(char *out, long s) { sprintf(out, "triangle %ld", s); }

static const struct shape_ops shapes[] = {
    {"square", sq_area, sq_perimeter, sq_describe},
    {"triangle", tri_area, tri_perimeter, tri_describe},
};

int main(int argc, char **argv)
{
    (void)argv;
    long total = 0;
    char buf[64] = "";
    const struct shape_ops *volatile table = shapes;  /* no call the compiler could make direct */
    for (int round = 0; round < 200 + argc; round++)
        for (int k = 0; k < 2; k++) {
            total += table[k].area(round % 37) + table[k].perimeter(round);
            table[k].describe(buf, round);
            total += (long)strlen(buf);
        }
    printf("%ld %s\n", total, buf);
    return 0;
}
