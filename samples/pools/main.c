/* Calls the functions of pools.S: victim and named directly, hidden through an address
 * computed at run time from argc (run it without arguments). */
#include <stdio.h>
#include <stdlib.h>

int victim(int x);
int named(int x, void (*fn)(int));
extern const int hidden_offset;

int main(int argc, char **argv) {
    (void)argv;
    /* argc - 1 (0 when run without arguments): an address no constant-following reading of
     * main's code computes, as a long call's movw/movt or a literal would be. */
    unsigned (*hidden)(int, void (*)(int)) =
        (unsigned (*)(int, void (*)(int)))((const char *)&hidden_offset + hidden_offset + (argc - 1));
    printf("victim=%d named=%d hidden=%#x\n", victim(argc + 4), named(0, exit), hidden(0, exit));
    if (argc > 5)
        named(argc, exit);
    return 0;
}
