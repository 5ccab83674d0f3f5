/* -fpatchable-function-entry=8,4: four nops before each function and four at its start,
 * the place before it listed in __patchable_function_entries for a tracer to patch. In a
 * stripped Thumb program that list's even addresses looked like A32 functions; the helpers,
 * reached only from functions named in a table, were then read as A32 and ran uncounted. */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static int h1(int x) { return x * x + 1; }
__attribute__((noinline)) static int h2(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += h1(i) & 7;
    return s;
}
__attribute__((noinline)) static int fa(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += h2(i % 50);
    return s;
}
__attribute__((noinline)) static int fb(int n) { return h2(n) + 3; }

struct op { const char *name; int (*fn)(int); };
const struct op ops[] = { {"a", fa}, {"b", fb} };

int main(int argc, char **argv)
{
    for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (argc > 1 && !strcmp(argv[1], ops[i].name)) {
            printf("%d\n", ops[i].fn(200));
            return 0;
        }
    return 1;
}
