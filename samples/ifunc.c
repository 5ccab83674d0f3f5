/* An IFUNC in the executable (tests/test_library_calls_first.py): the dynamic linker calls
 * resolve_add while it relocates the program (R_ARM_IRELATIVE), before the program's
 * entry and before its DT_PREINIT_ARRAY; a static program's start-up calls it instead. */
#include <stdio.h>

static int add_plain(int a, int b) { return a + b; }
static int add_swapped(int a, int b) { return b + a; }

static int (*resolve_add(void))(int, int)
{
    return add_plain ? add_plain : add_swapped;
}

int add(int a, int b) __attribute__((ifunc("resolve_add")));

int main(void)
{
    int sum = 0;
    for (int i = 0; i < 100; i++)
        sum = add(sum, i);
    printf("sum %d\n", sum);
    return 0;
}
