/*
 * A function whose only reference is a code pointer in a writable *and executable* data
 * section (Debian's gcl: the Lisp heap that unexec dumped into a ".data" flagged WAX holds
 * the function objects of the C primitives). Prints 242 with the argument 40.
 */
#include <stdio.h>
#include <stdlib.h>

int __attribute__((noinline)) helper(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += (i * 7) % 5;
    return s;
}

extern int (*table[])(int);

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10, s = 0;
    for (int k = 0; k < 3; k++)
        s += table[0](n + k);
    printf("%d\n", s);
    return 0;
}
